//! The `fuser` adapter: each callback finds its node, hands the request to the file system
//! ([`MountFs`]) on the mount's tokio runtime (replies are `Send`), and turns the answer into
//! the reply, its failure into an errno. Everything that would change the tree is refused
//! with EROFS.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, LockOwner, Notifier, OpenAccMode, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite,
    ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use tokio::runtime::Handle;

use super::{Attr, Caching, FsError, MountFs, Reading, BLOCK_SIZE};
use crate::tree::Kind;

/// The read-only file system of a mount, as `fuser` serves it.
pub struct IcefloeFs {
    fs: Arc<MountFs>,
    rt: Handle,
    /// The session's notifier, once the session is made.
    notifier: Arc<OnceLock<Notifier>>,
}

impl IcefloeFs {
    /// Serves `fs`, answering on its request runtime.
    pub fn new(fs: MountFs) -> IcefloeFs {
        let notifier: Arc<OnceLock<Notifier>> = Arc::new(OnceLock::new());
        let slot = notifier.clone();
        let fs = fs.with_invalidate(Box::new(move |parent, name| {
            if let Some(n) = slot.get() {
                // Fails harmlessly if the kernel no longer has the entry.
                let _ = n.inval_entry(INodeNo(parent), OsStr::new(name));
            }
        }));
        IcefloeFs {
            rt: fs.requests().clone(),
            fs: Arc::new(fs),
            notifier,
        }
    }

    /// Where the session's notifier goes once the session is made: it asks the kernel to
    /// forget entries when the inode table is past its bound.
    pub fn notifier_slot(&self) -> Arc<OnceLock<Notifier>> {
        self.notifier.clone()
    }

    /// Runs `f` on the runtime; its result (or errno) is handed to `reply`.
    fn spawn<T, F>(
        &self,
        f: impl FnOnce(Arc<MountFs>) -> F + Send + 'static,
        reply: impl FnOnce(Result<T, Errno>) + Send + 'static,
    ) where
        F: std::future::Future<Output = Result<T, FsError>> + Send + 'static,
        T: Send + 'static,
    {
        let fs = self.fs.clone();
        self.rt
            .spawn(async move { reply(f(fs).await.map_err(errno)) });
    }
}

/// The errno a request fails with.
fn errno(e: FsError) -> Errno {
    match e {
        FsError::NotFound => Errno::ENOENT,
        FsError::NotDir => Errno::ENOTDIR,
        FsError::IsDir => Errno::EISDIR,
        FsError::BadHandle => Errno::EBADF,
        FsError::Stale => Errno::ESTALE,
        FsError::NoXattr => Errno::NO_XATTR,
        FsError::Failed(e) => e.errno(),
    }
}

fn file_type(kind: Kind) -> FileType {
    match kind {
        Kind::Dir => FileType::Directory,
        Kind::File => FileType::RegularFile,
        Kind::Symlink => FileType::Symlink,
    }
}

fn file_attr(a: &Attr) -> FileAttr {
    FileAttr {
        ino: INodeNo(a.ino),
        size: a.size,
        blocks: a.blocks,
        atime: a.mtime,
        mtime: a.mtime,
        ctime: a.mtime,
        crtime: a.mtime,
        kind: file_type(a.kind),
        perm: a.perm,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: 0,
        blksize: a.blksize,
        flags: 0,
    }
}

fn fopen_flags(c: Caching) -> FopenFlags {
    match c {
        Caching::Keep => FopenFlags::FOPEN_KEEP_CACHE,
        Caching::DirectIo => FopenFlags::FOPEN_DIRECT_IO,
    }
}

/// Callbacks that would change the tree, by their argument types after `&self` (the reply's
/// last): each answers EROFS, the mount is read-only.
macro_rules! read_only {
    ($($name:ident($($arg:ty),*) -> $reply:ty;)*) => {
        $(
            fn $name(&self, $(_: $arg,)* reply: $reply) {
                reply.error(Errno::EROFS);
            }
        )*
    };
}

impl Filesystem for IcefloeFs {
    fn destroy(&mut self) {
        self.fs.remove_files();
    }

    // `batch_forget` (fuser's default) calls this for each inode.
    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.fs.forget(ino.0, nlookup);
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let parent_ino = parent.0;
        let parent = match self.fs.node(parent_ino) {
            Ok(n) => n,
            Err(e) => return reply.error(errno(e)),
        };
        let name = name.to_owned();
        self.spawn(
            move |fs| async move { fs.lookup(&parent, parent_ino, &name).await },
            move |r| match r {
                Ok((ttl, attr)) => reply.entry(&ttl, &file_attr(&attr), Generation(0)),
                Err(e) => reply.error(e),
            },
        );
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let node = match self.fs.node(ino.0) {
            Ok(n) => n,
            Err(e) => return reply.error(errno(e)),
        };
        self.spawn(
            move |fs| async move { Ok((super::ttl(&node), fs.attr(&node, ino.0).await?)) },
            move |r| match r {
                Ok((ttl, attr)) => reply.attr(&ttl, &file_attr(&attr)),
                Err(e) => reply.error(e),
            },
        );
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.fs.node(ino.0).map(|n| self.fs.link_target(&n)) {
            Ok(Some(target)) => reply.data(target.as_bytes()),
            Ok(None) => reply.error(Errno::ENOENT),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.acc_mode() != OpenAccMode::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        let node = match self.fs.node(ino.0) {
            Ok(n) => n,
            Err(e) => return reply.error(errno(e)),
        };
        self.spawn(
            move |fs| async move { fs.open(node).await },
            move |r| match r {
                Ok((fh, caching)) => reply.opened(FileHandle(fh), fopen_flags(caching)),
                Err(e) => reply.error(e),
            },
        );
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.fs.read(fh.0, offset, size) {
            Ok(Reading::Ready(bytes)) => reply.data(&bytes),
            Ok(Reading::Pending(read)) => self.spawn(
                move |_| read,
                move |r| match r {
                    Ok(bytes) => reply.data(&bytes),
                    Err(e) => reply.error(e),
                },
            ),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.fs.close(fh.0);
        reply.ok();
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let node = match self.fs.node(ino.0) {
            Ok(n) => n,
            Err(e) => return reply.error(errno(e)),
        };
        self.spawn(
            move |fs| async move { fs.readdir(&node, ino.0).await },
            move |r| match r {
                Ok(entries) => {
                    for (i, (ino, kind, name)) in
                        entries.into_iter().enumerate().skip(offset as usize)
                    {
                        if reply.add(INodeNo(ino), (i + 1) as u64, file_type(kind), name) {
                            break;
                        }
                    }
                    reply.ok()
                }
                Err(e) => reply.error(e),
            },
        );
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        let value = match self.fs.xattr(ino.0, name) {
            Ok(v) => v,
            Err(e) => return reply.error(errno(e)),
        };
        if size == 0 {
            reply.size(value.len() as u32)
        } else if (size as usize) < value.len() {
            reply.error(Errno::ERANGE)
        } else {
            reply.data(value.as_bytes())
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let u = self.fs.usage();
        reply.statfs(u.blocks, 0, 0, u.files, 0, BLOCK_SIZE, 255, BLOCK_SIZE);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, size: u32, reply: ReplyXattr) {
        if size == 0 {
            reply.size(0)
        } else {
            reply.data(&[])
        }
    }

    fn access(&self, _req: &Request, _ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        if mask.contains(AccessFlags::W_OK) {
            reply.error(Errno::EROFS)
        } else {
            reply.ok()
        }
    }

    read_only! {
        setattr(
            &Request, INodeNo, Option<u32>, Option<u32>, Option<u32>, Option<u64>,
            Option<TimeOrNow>, Option<TimeOrNow>, Option<SystemTime>, Option<FileHandle>,
            Option<SystemTime>, Option<SystemTime>, Option<SystemTime>,
            Option<fuser::BsdFileFlags>
        ) -> ReplyAttr;
        mknod(&Request, INodeNo, &OsStr, u32, u32, u32) -> ReplyEntry;
        mkdir(&Request, INodeNo, &OsStr, u32, u32) -> ReplyEntry;
        unlink(&Request, INodeNo, &OsStr) -> ReplyEmpty;
        rmdir(&Request, INodeNo, &OsStr) -> ReplyEmpty;
        symlink(&Request, INodeNo, &OsStr, &Path) -> ReplyEntry;
        rename(&Request, INodeNo, &OsStr, INodeNo, &OsStr, RenameFlags) -> ReplyEmpty;
        link(&Request, INodeNo, INodeNo, &OsStr) -> ReplyEntry;
        write(
            &Request, INodeNo, FileHandle, u64, &[u8], WriteFlags, OpenFlags, Option<LockOwner>
        ) -> ReplyWrite;
        create(&Request, INodeNo, &OsStr, u32, u32, i32) -> ReplyCreate;
        setxattr(&Request, INodeNo, &OsStr, &[u8], i32, u32) -> ReplyEmpty;
        removexattr(&Request, INodeNo, &OsStr) -> ReplyEmpty;
        fallocate(&Request, INodeNo, FileHandle, u64, u64, i32) -> ReplyEmpty;
    }
}
