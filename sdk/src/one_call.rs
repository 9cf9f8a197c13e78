//! A global allocator for controllers, which live for one call.
//!
//! The host gives every call a fresh instance and throws it away after, so
//! a controller's heap never needs to be tidy: [`OneCallAllocator`] hands
//! out memory from a pointer that only moves forward, takes back only the
//! latest block (a `Vec` growing at the top extends in place), and grows
//! linear memory when it runs out. Allocating is a few instructions where
//! the default allocator searches free lists; what is freed is not reused,
//! so a controller that allocates and frees far more than it keeps should
//! stay on the default allocator.
//!
//! ```ignore
//! #[cfg(target_arch = "wasm32")]
//! #[global_allocator]
//! static ALLOCATOR: wasmco_guest::OneCallAllocator = wasmco_guest::OneCallAllocator;
//! ```

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32;
use core::sync::atomic::{AtomicUsize, Ordering};

const PAGE: usize = 65_536;

/// The allocator; see the module's documentation.
pub struct OneCallAllocator;

/// The next free byte; 0 until the first allocation. A component instance
/// runs on one thread, so relaxed atomics are plain loads and stores.
static NEXT: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" {
    /// Where the linker put the end of static data and the stack: the heap
    /// starts here.
    static __heap_base: u8;
}

/// The first byte past `size` bytes from `next` aligned to `align`, after
/// growing memory to hold them; `None` when memory cannot grow.
fn claim(next: usize, size: usize, align: usize) -> Option<(usize, usize)> {
    let start = next.checked_add(align - 1)? & !(align - 1);
    let end = start.checked_add(size)?;
    let available = wasm32::memory_size(0) * PAGE;
    if end > available {
        let pages = (end - available).div_ceil(PAGE);
        if wasm32::memory_grow(0, pages) == usize::MAX {
            return None;
        }
    }
    Some((start, end))
}

fn next() -> usize {
    match NEXT.load(Ordering::Relaxed) {
        // Taking the address of a linker-defined symbol reads nothing.
        0 => &raw const __heap_base as usize,
        next => next,
    }
}

// SAFETY: every block handed out lies past the heap base, inside linear
// memory (grown first when needed), aligned as asked, and never overlaps
// another live block: the pointer only moves back over a block being
// freed or resized that ends exactly at it.
unsafe impl GlobalAlloc for OneCallAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match claim(next(), layout.size(), layout.align()) {
            Some((start, end)) => {
                NEXT.store(end, Ordering::Relaxed);
                start as *mut u8
            }
            None => core::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ptr as usize + layout.size() == next() {
            NEXT.store(ptr as usize, Ordering::Relaxed);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let start = ptr as usize;
        if start + layout.size() == next() {
            // The latest block: grow or shrink it where it is.
            return match claim(start, new_size, 1) {
                Some((_, end)) => {
                    NEXT.store(end, Ordering::Relaxed);
                    ptr
                }
                None => core::ptr::null_mut(),
            };
        }
        if new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: the caller's layout with a size it guarantees is valid.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as for `alloc`.
        let moved = unsafe { self.alloc(new_layout) };
        if !moved.is_null() {
            // SAFETY: both blocks are live and distinct; the old one holds
            // `layout.size()` bytes.
            unsafe { core::ptr::copy_nonoverlapping(ptr, moved, layout.size()) };
        }
        moved
    }
}
