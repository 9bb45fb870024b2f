//! Operations and classes: the names that statistics and rules use.
//!
//! An operation is named after the file-system operation a call causes (`getattr` for every
//! flavour of `stat`), so that a rule written once covers all the libc spellings of it.
//! The table below is the only list of operations; the stage's symbol table maps each
//! intercepted symbol to one of these.

use std::fmt;
use std::str::FromStr;

/// The class of an operation, the coarse grain of a rule (`class=metadata`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Class {
    /// Reads, writes, allocation and mappings: the bytes of files.
    Data,
    /// Everything that asks the metadata servers about or changes a name or an inode.
    Metadata,
    /// Extended attributes.
    Xattr,
    /// Creating, removing and listing directory entries that are not plain files.
    Directory,
}

impl Class {
    /// Every class, in a stable order.
    pub const ALL: [Class; 4] = [Class::Data, Class::Metadata, Class::Xattr, Class::Directory];

    /// The name used in rules and statistics.
    pub const fn name(self) -> &'static str {
        match self {
            Class::Data => "data",
            Class::Metadata => "metadata",
            Class::Xattr => "xattr",
            Class::Directory => "directory",
        }
    }
}

macro_rules! ops {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $class:ident; )*) => {
        /// One file-system operation, as counted and as named in rules.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Op { $( $(#[$doc])* $variant, )* }

        impl Op {
            /// Every operation, in the order of the table (the order of statistics).
            pub const ALL: &'static [Op] = &[$(Op::$variant),*];
            /// How many operations there are.
            pub const COUNT: usize = Op::ALL.len();

            /// The name used in rules and statistics.
            pub const fn name(self) -> &'static str {
                match self { $(Op::$variant => $name,)* }
            }

            /// The class this operation belongs to.
            pub const fn class(self) -> Class {
                match self { $(Op::$variant => Class::$class,)* }
            }
        }
    };
}

ops! {
    /// Opening or creating a file or directory stream.
    Open = "open", Metadata;
    /// Closing a descriptor, stream or directory stream.
    Close = "close", Metadata;
    /// Reading an inode's attributes (`stat` and its kin).
    Getattr = "getattr", Metadata;
    /// Checking permissions (`access`).
    Access = "access", Metadata;
    /// Changing attributes: mode, owner, times, size.
    Setattr = "setattr", Metadata;
    /// Renaming an entry.
    Rename = "rename", Metadata;
    /// Creating a hard link.
    Link = "link", Metadata;
    /// Creating a symbolic link.
    Symlink = "symlink", Metadata;
    /// Reading a symbolic link.
    Readlink = "readlink", Metadata;
    /// Removing a name.
    Unlink = "unlink", Metadata;
    /// File-system statistics (`statfs`, `statvfs`).
    Statfs = "statfs", Metadata;
    /// Flushing to stable storage.
    Sync = "sync", Metadata;
    /// Creating a directory.
    Mkdir = "mkdir", Directory;
    /// Removing a directory.
    Rmdir = "rmdir", Directory;
    /// Creating a special file or FIFO.
    Mknod = "mknod", Directory;
    /// Listing a directory.
    Readdir = "readdir", Directory;
    /// Reading an extended attribute.
    Getxattr = "getxattr", Xattr;
    /// Setting an extended attribute.
    Setxattr = "setxattr", Xattr;
    /// Listing extended attributes.
    Listxattr = "listxattr", Xattr;
    /// Removing an extended attribute.
    Removexattr = "removexattr", Xattr;
    /// Reading bytes.
    Read = "read", Data;
    /// Writing bytes.
    Write = "write", Data;
    /// Reserving space (`fallocate`).
    Allocate = "allocate", Data;
    /// Mapping a file into memory; counted, held only by a rule that names `op=mmap`.
    Mmap = "mmap", Data;
}

impl Op {
    /// The operation's position in [`Op::ALL`], used to index counters.
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not an operation or a class.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} '{name}'")]
pub struct UnknownName {
    /// "operation" or "class".
    pub kind: &'static str,
    /// What was given.
    pub name: String,
}

/// The member of `all` whose name is `s`.
fn by_name<T: Copy>(
    all: &[T],
    name: fn(T) -> &'static str,
    kind: &'static str,
    s: &str,
) -> Result<T, UnknownName> {
    all.iter()
        .copied()
        .find(|&x| name(x) == s)
        .ok_or_else(|| UnknownName {
            kind,
            name: s.to_owned(),
        })
}

impl FromStr for Op {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        by_name(Op::ALL, Op::name, "operation", s)
    }
}

impl FromStr for Class {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        by_name(&Class::ALL, Class::name, "class", s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &op in Op::ALL {
            assert_eq!(op.name().parse::<Op>().unwrap(), op);
            assert_eq!(Op::ALL[op.index()], op);
        }
        for c in Class::ALL {
            assert_eq!(c.name().parse::<Class>().unwrap(), c);
        }
        assert!("stat".parse::<Op>().is_err());
    }
}
