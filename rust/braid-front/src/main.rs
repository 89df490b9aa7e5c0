//! `braid`: the CNI executable (see the crate documentation in `lib.rs`). No C library: its
//! own entry point, memory from `mmap`, the memory functions the compiler calls, and a panic
//! that becomes the code-999 error JSON, as the full shim's does.
#![no_std]
#![no_main]
// The memory functions below must not be turned back into calls to themselves.
#![no_builtins]
#![allow(unsafe_code)]

#[cfg(not(target_arch = "x86_64"))]
compile_error!(
    "the braid front is written for x86-64 Linux; elsewhere install braid-full as braid"
);

extern crate alloc;

use core::alloc::{GlobalAlloc, Layout};
use core::arch::{asm, global_asm};
use core::cell::UnsafeCell;

use braid_front::{emit, run, sys, Process};
use braid_wire::version::CURRENT;
use braid_wire::{codes, CniError};

// The kernel starts the program here with the stack pointer at `argc`; the stack is aligned
// for the call and the frame chain ends.
global_asm!(
    ".globl _start",
    "_start:",
    "xor ebp, ebp",
    "mov rdi, rsp",
    "and rsp, -16",
    "call {entry}",
    "ud2",
    entry = sym entry,
);

/// The program: a CNI call (`braid_front::run`).
extern "C" fn entry(stack: *const usize) -> ! {
    // SAFETY: `_start` passes the initial stack pointer, where the kernel put argc, argv, envp.
    let process = unsafe { Process::from_stack(stack) };
    run(process)
}

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    emit(&CniError::new(codes::INTERNAL, "braid panicked").to_json(CURRENT));
    sys::exit(1)
}

/// Memory for a process that lives for one call: carved from chunks the kernel maps, never
/// given back (the process exits within milliseconds). Single-threaded.
struct Arena {
    state: UnsafeCell<(usize, usize)>, // (next free address, end of the chunk)
}

// SAFETY: the front never starts a thread.
unsafe impl Sync for Arena {}

const CHUNK: usize = 1 << 20;

unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: single-threaded (see `Sync`): no other reference to the state exists.
        let state = unsafe { &mut *self.state.get() };
        let align = layout.align().max(16);
        let start = (state.0 + align - 1) & !(align - 1);
        if state.0 != 0 && start + layout.size() <= state.1 {
            state.0 = start + layout.size();
            return start as *mut u8;
        }
        let len = (layout.size() + align).max(CHUNK).next_multiple_of(4096);
        let Some(chunk) = sys::map(len) else {
            return core::ptr::null_mut();
        };
        let base = chunk as usize;
        let start = (base + align - 1) & !(align - 1);
        *state = (start + layout.size(), base + len);
        start as *mut u8
    }

    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}
}

#[global_allocator]
static ARENA: Arena = Arena {
    state: UnsafeCell::new((0, 0)),
};

// The memory functions the compiler emits calls to (there is no C library to provide them).

#[unsafe(no_mangle)]
unsafe extern "C" fn memcpy(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: the caller's contract: non-overlapping regions valid for `n` bytes.
    unsafe {
        asm!("rep movsb", inout("rcx") n => _, inout("rdi") dest => _, inout("rsi") src => _,
             options(nostack, preserves_flags));
    }
    dest
}

#[unsafe(no_mangle)]
unsafe extern "C" fn memmove(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    if (dest as usize).wrapping_sub(src as usize) >= n {
        // SAFETY: copying forwards never overwrites a byte not yet read here.
        return unsafe { memcpy(dest, src, n) };
    }
    // SAFETY: copying backwards (the direction flag set, then cleared as the ABI requires).
    unsafe {
        asm!("std", "rep movsb", "cld",
             inout("rcx") n => _, inout("rdi") dest.add(n).wrapping_sub(1) => _,
             inout("rsi") src.add(n).wrapping_sub(1) => _, options(nostack));
    }
    dest
}

#[unsafe(no_mangle)]
unsafe extern "C" fn memset(dest: *mut u8, byte: i32, n: usize) -> *mut u8 {
    // SAFETY: the caller's contract: `dest` valid for `n` bytes.
    unsafe {
        asm!("rep stosb", inout("rcx") n => _, inout("rdi") dest => _, in("al") byte.to_le_bytes()[0],
             options(nostack, preserves_flags));
    }
    dest
}

#[unsafe(no_mangle)]
unsafe extern "C" fn memcmp(left: *const u8, right: *const u8, n: usize) -> i32 {
    for at in 0..n {
        // SAFETY: the caller's contract: both valid for `n` bytes.
        let (one, other) = unsafe { (*left.add(at), *right.add(at)) };
        if one != other {
            return i32::from(one) - i32::from(other);
        }
    }
    0
}

#[unsafe(no_mangle)]
unsafe extern "C" fn bcmp(left: *const u8, right: *const u8, n: usize) -> i32 {
    // SAFETY: the same contract as memcmp's.
    unsafe { memcmp(left, right, n) }
}

#[unsafe(no_mangle)]
unsafe extern "C" fn strlen(text: *const u8) -> usize {
    let mut len = 0;
    // SAFETY: the caller's contract: a NUL-terminated string.
    while unsafe { *text.add(len) } != 0 {
        len += 1;
    }
    len
}

/// Named by the unwinding tables of the prebuilt `core`; with panics aborting, never called.
#[unsafe(no_mangle)]
extern "C" fn rust_eh_personality() {}
