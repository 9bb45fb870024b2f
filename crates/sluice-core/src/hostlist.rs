//! Host lists written the Slurm way: `node[001-512]`, `a[1-3,7],b2`.
//!
//! A job on 512 nodes has a node list an administrator cannot read comma-joined, and
//! Slurm's own tools (`scontrol show hostlist`, `squeue`, `sinfo`) already taught them
//! this notation, so every view of sluice prints node lists in it, and reads it back.
//!
//! A name splits into a prefix and its trailing digits. Names with the same prefix share
//! one bracket, consecutive numbers form a range, and zero padding is kept as Slurm
//! keeps it: a range's width is that of its first number (`n[08-10]` is `n08 n09 n10`,
//! `n[8-10]` is `n8 n9 n10`), so `n9` and `n10` share a range and `n09` and `n9` do not.
//! Unlike Slurm's unsorted lists, [`compress`] sorts (by prefix, then by number) and drops
//! repeats, as `scontrol show hostlistsorted` does: a view has no order to keep.

use std::fmt;

/// At most this many names from one list: a typing slip (`n[1-99999999]`) must not
/// allocate gigabytes.
pub const MAX_HOSTS: usize = 1 << 20;

/// Trailing digits beyond this many are part of the prefix: the number must fit in 64
/// bits with room to count past it.
const MAX_DIGITS: usize = 18;

/// Why a host list could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("host list '{list}': at column {column}: {expected}")]
pub struct HostlistError {
    /// The list as given.
    pub list: String,
    /// Where reading stopped, from 1.
    pub column: usize,
    /// What was expected there.
    pub expected: &'static str,
}

/// One name, split: `node007` is `("node", Some(7), 3)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Host<'a> {
    prefix: &'a str,
    number: Option<u64>,
    digits: usize,
}

impl<'a> Host<'a> {
    fn split(name: &'a str) -> Host<'a> {
        let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
        let (prefix, tail) = name.split_at(name.len() - digits);
        match tail.parse() {
            Ok(number) if digits <= MAX_DIGITS => Host {
                prefix,
                number: Some(number),
                digits,
            },
            _ => Host {
                prefix: name,
                number: None,
                digits: 0,
            },
        }
    }

    /// Whether printing its number `width` wide gives its digits back.
    fn fits(&self, width: usize) -> bool {
        let natural = self.number.map_or(0, decimal_len);
        // Padded (`007`): only its own width; unpadded (`7`, `10`): any width up to its own.
        if self.digits > natural {
            self.digits == width
        } else {
            width <= self.digits
        }
    }
}

fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// Consecutive numbers printed `width` wide.
struct Range {
    first: u64,
    last: u64,
    width: usize,
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self.width;
        write!(f, "{:0width$}", self.first)?;
        if self.last > self.first {
            write!(f, "-{:0width$}", self.last)?;
        }
        Ok(())
    }
}

/// Writes `hosts` as one Slurm host list: `node[001-003,007],login`.
///
/// ```
/// use sluice_core::hostlist::compress;
/// assert_eq!(compress(["b2", "a3", "a1", "a2", "a7"]), "a[1-3,7],b2");
/// assert_eq!(compress(["n9", "n10", "n11"]), "n[9-11]");
/// ```
pub fn compress<S: AsRef<str>>(hosts: impl IntoIterator<Item = S>) -> String {
    let names: Vec<S> = hosts.into_iter().collect();
    let mut split: Vec<Host> = names.iter().map(|n| Host::split(n.as_ref())).collect();
    split.sort_unstable();
    split.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut at = 0;
    while at < split.len() {
        let host = split[at];
        let Some(first) = host.number else {
            out.push(host.prefix.to_owned());
            at += 1;
            continue;
        };
        let mut ranges = vec![Range {
            first,
            last: first,
            width: host.digits,
        }];
        at += 1;
        while let Some(next) = split.get(at).filter(|h| h.prefix == host.prefix) {
            let number = next
                .number
                .expect("numbered names sort after the bare prefix");
            let range = ranges.last_mut().expect("one range at least");
            if range.last.checked_add(1) == Some(number) && next.fits(range.width) {
                range.last = number;
            } else {
                ranges.push(Range {
                    first: number,
                    last: number,
                    width: next.digits,
                });
            }
            at += 1;
        }
        let inside: Vec<String> = ranges.iter().map(Range::to_string).collect();
        out.push(match ranges.as_slice() {
            [one] if one.first == one.last => format!("{}{one}", host.prefix),
            _ => format!("{}[{}]", host.prefix, inside.join(",")),
        });
    }
    out.join(",")
}

/// Reads a Slurm host list into its names, in the order written: `n[1-2],login` is
/// `n1 n2 login`. One bracket per name, optionally followed by a suffix (`n[1-2]-ib`).
///
/// ```
/// use sluice_core::hostlist::expand;
/// assert_eq!(expand("n[08-10],b2").unwrap(), ["n08", "n09", "n10", "b2"]);
/// assert!(expand("n[3-1]").is_err());
/// ```
pub fn expand(list: &str) -> Result<Vec<String>, HostlistError> {
    let fail = |column: usize, expected| HostlistError {
        list: list.to_owned(),
        column: column + 1,
        expected,
    };
    let mut hosts = Vec::new();
    if list.is_empty() {
        return Ok(hosts);
    }
    let mut start = 0;
    for item in split_top(list).map_err(|at| fail(at, "a ']' closing the '['"))? {
        let here = start;
        start += item.len() + 1;
        let Some(open) = item.find('[') else {
            if item.is_empty() || item.contains(']') {
                return Err(fail(here, "a host name"));
            }
            hosts.push(item.to_owned());
            continue;
        };
        let (prefix, rest) = item.split_at(open);
        let close = rest.find(']').ok_or_else(|| fail(here + open, "a ']'"))?;
        let (inside, suffix) = (&rest[1..close], &rest[close + 1..]);
        if suffix.contains(['[', ']']) {
            return Err(fail(here + open + close + 1, "one bracket per host name"));
        }
        let mut column = here + open + 1;
        for range in inside.split(',') {
            let (first, last) = range.split_once('-').unwrap_or((range, range));
            let number = |text: &str| {
                let digits_only = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
                digits_only && text.len() <= MAX_DIGITS
            };
            if !number(first) || !number(last) {
                return Err(fail(column, "a number or a range N-M of numbers"));
            }
            let (lo, hi): (u64, u64) = (first.parse().unwrap_or(0), last.parse().unwrap_or(0));
            if hi < lo {
                return Err(fail(column, "a range whose end is not below its start"));
            }
            let count = usize::try_from(hi - lo + 1).unwrap_or(usize::MAX);
            if count > MAX_HOSTS - hosts.len().min(MAX_HOSTS) {
                return Err(fail(column, "at most 1048576 host names"));
            }
            let width = first.len();
            hosts.extend((lo..=hi).map(|n| format!("{prefix}{n:0width$}{suffix}")));
            column += range.len() + 1;
        }
    }
    Ok(hosts)
}

/// `list` split at the commas outside brackets, or the byte where an unclosed `[` opens.
fn split_top(list: &str) -> Result<Vec<&str>, usize> {
    let (mut items, mut from, mut open) = (Vec::new(), 0, None);
    for (at, c) in list.char_indices() {
        match c {
            '[' if open.is_none() => open = Some(at),
            ']' => open = None,
            ',' if open.is_none() => {
                items.push(&list[from..at]);
                from = at + 1;
            }
            _ => {}
        }
    }
    match open {
        Some(at) => Err(at),
        None => {
            items.push(&list[from..]);
            Ok(items)
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn consecutive_padded_names_make_one_range() {
        let nodes: Vec<String> = (1..=512).map(|n| format!("node{n:03}")).collect();
        assert_eq!(compress(&nodes), "node[001-512]");
        assert_eq!(expand("node[001-512]").unwrap(), nodes);
    }

    #[test]
    fn names_share_a_bracket_by_prefix_and_a_single_name_has_none() {
        assert_eq!(compress(["a1", "a2", "a3", "a7", "b2"]), "a[1-3,7],b2");
        assert_eq!(compress(["login", "n1", "n2"]), "login,n[1-2]");
        assert_eq!(compress(["n2", "n2", "n1"]), "n[1-2]");
        assert_eq!(compress(["n", "n1"]), "n,n1");
        assert_eq!(compress::<&str>([]), "");
    }

    #[test]
    fn padding_is_kept_as_slurm_keeps_it() {
        assert_eq!(compress(["n9", "n10"]), "n[9-10]");
        assert_eq!(compress(["n09", "n10"]), "n[09-10]");
        assert_eq!(compress(["n09", "n9"]), "n[9,09]");
        assert_eq!(compress(["n099", "n100", "n1000"]), "n[099-100,1000]");
        assert_eq!(compress(["n0", "n1"]), "n[0-1]");
        assert_eq!(compress(["n00", "n01", "n1"]), "n[00,1,01]");
        assert_eq!(expand("n[8-10]").unwrap(), ["n8", "n9", "n10"]);
        assert_eq!(expand("n[098-100]").unwrap(), ["n098", "n099", "n100"]);
    }

    #[test]
    fn names_with_long_digit_tails_stay_whole() {
        let long = "x1234567890123456789012";
        assert_eq!(compress([long, "x1"]), format!("x1,{long}"));
        assert_eq!(compress(["n18446744073709551615"]), "n18446744073709551615");
    }

    #[test]
    fn suffixes_after_the_bracket_are_read() {
        assert_eq!(expand("n[1-2]-ib,m").unwrap(), ["n1-ib", "n2-ib", "m"]);
    }

    #[test]
    fn bad_lists_say_where_and_what() {
        let error = |list: &str| expand(list).unwrap_err().to_string();
        assert_eq!(
            error("n[3-1]"),
            "host list 'n[3-1]': at column 3: a range whose end is not below its start"
        );
        assert!(error("n[1-2").contains("column 2: a ']' closing"));
        assert!(error("n[1-x]").contains("a number or a range"));
        assert!(error("a,,b").contains("column 3: a host name"));
        assert!(error("n[]").contains("a number"));
        assert!(error("n[1-2]x[3]").contains("one bracket"));
        assert!(error("n[0-99999999]").contains("at most 1048576"));
        assert!(error("n]").contains("a host name"));
    }

    /// A name as clusters make them: a few prefixes, numbers padded or not, or none.
    fn name() -> impl Strategy<Value = String> {
        let prefix = prop::sample::select(vec!["node", "n", "gpu-", "rack1-n", "login", "a"]);
        let number = prop::option::of((0u64..1200, 0usize..5));
        (prefix, number).prop_map(|(p, n)| match n {
            Some((n, width)) => format!("{p}{n:0width$}"),
            None => p.to_owned(),
        })
    }

    proptest! {
        #[test]
        fn expanding_a_compressed_list_gives_its_names(
            names in prop::collection::vec(name(), 0..60)
        ) {
            let list = compress(&names);
            let mut back = expand(&list).unwrap();
            back.sort();
            let mut want = names.clone();
            want.sort();
            want.dedup();
            prop_assert_eq!(back, want, "{}", list);
        }

        #[test]
        fn compress_after_expand_is_the_identity(
            names in prop::collection::vec(name(), 0..60)
        ) {
            let list = compress(&names);
            let expanded = expand(&list).unwrap();
            prop_assert_eq!(compress(&expanded), list);
        }

        #[test]
        fn no_list_makes_expand_panic(list in "[a-c0-9\\[\\],-]{0,16}") {
            let _ = expand(&list);
        }
    }
}
