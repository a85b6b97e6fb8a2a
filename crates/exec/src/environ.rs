//! The agent's own environment, as other processes can see it.
//!
//! `/proc/<pid>/environ` shows the environment block the process was started with, whatever it
//! later does with `setenv`/`unsetenv`. Not being dumpable keeps other users' processes (and
//! sandboxed commands without `CAP_SYS_PTRACE`) out of it, but on this kernel a root process
//! without that capability still reads another root process's `environ` (memory, `mem`, stays
//! closed). So the agent wipes the values of API keys from the block itself once it has read them.

// Why unsafe: the block is only reachable through libc's `environ` pointer array; its strings
// are overwritten in place (same length, so nothing moves). Only sound while no other thread
// reads or writes the environment, hence the contract on the public function.
#![allow(unsafe_code)]

use std::ffi::CStr;

unsafe extern "C" {
    static mut environ: *mut *mut libc::c_char;
}

/// Overwrites, in this process's environment block, the value of every variable that names an
/// API key (`*_API_KEY`) with NUL bytes: `/proc/<agent>/environ` then shows the name with an
/// empty value. Call once, at the very start of `main`, after the environment was read
/// (ferrite's `Env` snapshot) and before any other thread exists.
pub fn wipe_keys_from_own_environment() {
    // SAFETY: single-threaded by contract; every pointer comes from the NULL-terminated
    // `environ` array and points to a NUL-terminated "NAME=value" string; the writes stay within
    // that string's bytes (before its terminating NUL).
    unsafe {
        let mut entry = environ;
        if entry.is_null() {
            return;
        }
        while !(*entry).is_null() {
            let text = *entry;
            let bytes = CStr::from_ptr(text).to_bytes();
            if let Some(eq) = bytes.iter().position(|&b| b == b'=')
                && bytes[..eq].ends_with(b"_API_KEY")
            {
                let len = bytes.len();
                for i in eq + 1..len {
                    *text.add(i) = 0;
                }
            }
            entry = entry.add(1);
        }
    }
}
