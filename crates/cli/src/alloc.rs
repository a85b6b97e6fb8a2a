//! glibc malloc settings for a long-lived agent.
//!
//! Every prompt of a long session serializes a request body of megabytes and then frees it.
//! With glibc's defaults the mmap threshold grows to the largest block freed, so after the first
//! prompt those bodies come from the heap and the freed space stays with the process: 37 MiB of
//! RSS after a few prompts on a 3.4 MB session against 26 MiB with these settings
//! (`bench/turn_overhead.py`, 10,000 entries). A fixed threshold of 1 MiB hands such blocks
//! straight back to the kernel when freed; the price would be faulting a fresh mapping in for
//! each large body, which is why the provider client keeps the last bodies' buffers until the
//! agent rests (`ferrite_llm::release_buffers`). Tried: a
//! 32 MiB threshold with no automatic trimming, every block back at rest by [`release`]: bodies
//! 2-3 ms faster at 10,000 entries, but 13 MiB of heap at rest instead of 7.5 (the history's
//! new blocks pin the heap between the bodies' pages). Two arenas are plenty for the runtime's
//! two workers and its blocking threads, and hold about 1 MiB less. (An allocator crate would do
//! the same at the cost of a C build; this is a few calls.)

/// Applies the settings; call before any thread is started.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn tune() {
    // SAFETY: `mallopt` only sets allocator parameters and is called before other threads
    // exist; a refused setting (return 0) leaves glibc's default, which is still correct.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1024 * 1024);
        // No trimming of the heap's top as blocks are freed: a request's many small blocks
        // are freed after it and allocated again for the next one, which then faulted the
        // same pages back in (14% of prompt time at 10,000 entries). `release` trims it all
        // once the agent rests.
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 * 1024 * 1024);
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune() {}

/// Returns the free memory of every arena to the kernel, not only what sits at the top of the
/// heap: after a turn on a long session, the freed copies of the history lie between live
/// blocks, where glibc never trims on its own. It walks the free lists, well under a
/// millisecond for the heaps an agent has; it runs on a blocking thread once the agent rests.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn release() {
    // SAFETY: `malloc_trim` only madvises free pages away; it takes the arenas' own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn release() {}
