//! Running per-block work on `threads` cores. One thread means a plain loop on the caller's
//! thread; more means a rayon pool of that size, built once per size and kept.

use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;

/// Resolves a thread count: 0 means every core the process may use.
pub fn resolve_threads(threads: usize) -> usize {
    if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    }
}

/// The shared pool of `threads` workers, built at the first call for that size and kept; `None`
/// if the OS refuses to start them (callers then run on their own thread).
pub fn pool(threads: usize) -> Option<Arc<rayon::ThreadPool>> {
    type Pools = Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>>;
    static POOLS: OnceLock<Pools> = OnceLock::new();
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = pools.iter().find(|(n, _)| *n == threads) {
        return Some(p.clone());
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("glyd-{i}"))
        .build()
        .ok()
        .map(Arc::new)?;
    pools.push((threads, p.clone()));
    Some(p)
}

/// `items.map(f)`, in order, on `threads` threads (already resolved, ≥ 1).
pub fn map<T, U, F>(threads: usize, items: &[T], f: F) -> Vec<U>
where
    T: Sync,
    U: Send,
    F: Fn(&T) -> U + Sync + Send,
{
    match pool_for(threads, items.len()) {
        Some(p) => p.install(|| items.par_iter().map(f).collect()),
        None => items.iter().map(f).collect(),
    }
}

/// `items.map(f)` over mutable items (each owning a disjoint output slice), in order.
pub fn map_mut<T, U, F>(threads: usize, items: &mut [T], f: F) -> Vec<U>
where
    T: Send,
    U: Send,
    F: Fn(&mut T) -> U + Sync + Send,
{
    match pool_for(threads, items.len()) {
        Some(p) => p.install(|| items.par_iter_mut().map(f).collect()),
        None => items.iter_mut().map(f).collect(),
    }
}

fn pool_for(threads: usize, items: usize) -> Option<Arc<rayon::ThreadPool>> {
    if threads <= 1 || items <= 1 {
        None
    } else {
        pool(threads)
    }
}
