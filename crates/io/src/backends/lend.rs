//! Memory shared with the kernel, and frames lent out of it.
//!
//! An AF_XDP socket receives into its UMEM, a mapping both the kernel and
//! this process write. A frame the kernel hands over sits in one chunk of
//! it; rather than copying it out, the backend lends the chunk to the
//! runner's buffer pool as a [`LentFrame`], an owning token: while it
//! lives, nothing else (kernel or backend) touches the chunk, so the pool
//! may read and write the frame through it (the rules read it, CE marks
//! and corruption are written in place). When the pool is done with the
//! frame, the token goes back to the port that lent it
//! ([`super::Port::reclaim`]), which returns the chunk to the kernel.
//!
//! The token keeps the mapping alive ([`Arc`]), so a port may be dropped
//! (its interface deleted) while the pool still holds frames it lent.

use std::io;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::Arc;

/// A memory mapping, unmapped when dropped: a ring shared with the kernel,
/// or anonymous memory (a UMEM).
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory. Who may access which bytes is
// decided by its owners: a ring's indexes are atomics and its entries
// belong to one side at a time; a UMEM chunk is accessed either by the
// backend while it owns it (fill, RX, TX and completion rings, its free
// lists) or through the one `LentFrame` that owns it. Moving or sharing
// the mapping between threads adds no access of its own.
unsafe impl Send for Mapping {}
// SAFETY: see `Send` above; `&Mapping` gives no access to the bytes by
// itself (only the base pointer and the length).
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Map `len` bytes of `fd` at `offset` (a ring), or anonymous memory
    /// when `fd` is `None` (a UMEM).
    pub(crate) fn new(fd: Option<RawFd>, len: usize, offset: u64) -> io::Result<Mapping> {
        let (flags, fd) = match fd {
            Some(fd) => (libc::MAP_SHARED | libc::MAP_POPULATE, fd),
            None => (
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
            ),
        };
        // SAFETY: a fresh mapping at an address the kernel chooses; the
        // result is checked before use and owned by the returned value.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p as *mut u8).ok_or_else(|| io::Error::other("mmap: null"))?;
        Ok(Mapping { ptr, len })
    }

    /// The first byte.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Bytes mapped.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the region mapped in `new`; no reference
        // into it outlives the owner of this value (a `LentFrame` holds
        // the `Arc` it came from).
        unsafe {
            libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len);
        }
    }
}

/// A frame lent by a backend out of memory it shares with the kernel: the
/// owning token of its chunk. See the module documentation.
pub struct LentFrame {
    region: Arc<Mapping>,
    /// Offset of the frame's first byte in the region.
    addr: usize,
    /// Bytes from `addr` to the end of the chunk (the most the frame may
    /// hold).
    room: usize,
}

impl std::fmt::Debug for LentFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LentFrame")
            .field("addr", &self.addr)
            .field("room", &self.room)
            .finish()
    }
}

impl LentFrame {
    /// The token of the `room` bytes at `addr` in `region`, or `None` if
    /// they are not inside it.
    ///
    /// # Safety
    ///
    /// The caller owns those bytes (the kernel handed them over and will
    /// not write them until they are given back) and makes no other
    /// access to them, nor another token for them, while this one lives.
    pub(crate) unsafe fn new(region: Arc<Mapping>, addr: usize, room: usize) -> Option<LentFrame> {
        (addr.checked_add(room)? <= region.len()).then_some(LentFrame { region, addr, room })
    }

    /// Offset of the frame in its region (the address the kernel gave).
    pub fn addr(&self) -> u64 {
        self.addr as u64
    }

    /// Bytes the frame may hold.
    pub fn room(&self) -> usize {
        self.room
    }

    /// Whether the frame was lent out of `region`.
    pub(crate) fn is_from(&self, region: &Arc<Mapping>) -> bool {
        Arc::ptr_eq(&self.region, region)
    }

    /// The first `len` bytes (at most the room).
    pub fn bytes(&self, len: usize) -> &[u8] {
        // SAFETY: `addr + room` lies inside the live mapping (checked in
        // `new`, and the `Arc` keeps it mapped), and this token owns those
        // bytes: nothing writes them while `&self` is borrowed.
        unsafe { std::slice::from_raw_parts(self.region.ptr().add(self.addr), len.min(self.room)) }
    }

    /// The first `len` bytes (at most the room), to write.
    pub fn bytes_mut(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: as in `bytes`; `&mut self` makes the borrow unique.
        unsafe {
            std::slice::from_raw_parts_mut(self.region.ptr().add(self.addr), len.min(self.room))
        }
    }
}
