//! A placement's figures per pool.
//!
//! A cycle reads every placement's observation in every pool and compares every rate it
//! computed with the one last pushed: tens of thousands of lookups, each by pool name.
//! A map of its own per placement costs a cache miss for the map, one for its keys and
//! one for each key's bytes, and between two cycles the controller's network buffers
//! have pushed all of them out of the caches. Here a placement's first pools are kept
//! inline, and the names are shared with the pools they name (see `registry::intern`),
//! so that a lookup reads the placement and one name that every placement shares.

use std::sync::Arc;

use smallvec::SmallVec;

/// Values by pool name; the first two inline.
#[derive(Debug, Clone)]
pub(super) struct PoolMap<V>(SmallVec<[(Arc<str>, V); 2]>);

impl<V> Default for PoolMap<V> {
    fn default() -> Self {
        PoolMap(SmallVec::new())
    }
}

impl<V> PoolMap<V> {
    /// The value of `pool`.
    pub(super) fn get(&self, pool: &str) -> Option<&V> {
        self.0.iter().find(|(k, _)| named(k, pool)).map(|(_, v)| v)
    }

    /// The value of `pool`, to change.
    pub(super) fn get_mut(&mut self, pool: &str) -> Option<&mut V> {
        self.0
            .iter_mut()
            .find(|(k, _)| named(k, pool))
            .map(|(_, v)| v)
    }

    /// Sets `pool`'s value, under `pool` itself: a pool made again (a new algorithm)
    /// has a new name to share.
    pub(super) fn insert(&mut self, pool: Arc<str>, value: V) {
        match self.0.iter_mut().find(|(k, _)| *k == pool) {
            Some(slot) => *slot = (pool, value),
            None => self.0.push((pool, value)),
        }
    }

    /// Keeps the pools `keep` says yes to.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.0.retain(|(k, _)| keep(k));
    }

    /// Every pool's name and value.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// Forgets every pool.
    pub(super) fn clear(&mut self) {
        self.0.clear();
    }
}

/// Whether `key` is `pool`: at once when both are the pool's shared name.
fn named(key: &Arc<str>, pool: &str) -> bool {
    (std::ptr::eq(key.as_ptr(), pool.as_ptr()) && key.len() == pool.len()) || **key == *pool
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_is_found_by_name_however_its_name_was_made() {
        let mut m = PoolMap::default();
        for (i, pool) in ["md", "data", "xattr"].into_iter().enumerate() {
            m.insert(Arc::from(pool), i);
        }
        m.insert(Arc::from("md".to_owned()), 10);
        assert_eq!(
            (m.get("md"), m.get("data"), m.get("xattr"), m.get("dir")),
            (Some(&10), Some(&1), Some(&2), None)
        );
        let shared: Arc<str> = Arc::from("bw");
        m.insert(shared.clone(), 3);
        assert_eq!(
            (m.get(&shared), m.get("bw"), m.get("b")),
            (Some(&3), Some(&3), None)
        );
        m.retain(|pool| pool != "data");
        assert_eq!((m.get("data"), m.get("xattr")), (None, Some(&2)));
        m.clear();
        assert_eq!(m.get("md"), None);
    }
}
