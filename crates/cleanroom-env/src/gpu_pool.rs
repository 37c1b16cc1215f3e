//! The GPUs a backend gives environments: each environment of a task that
//! needs N takes N for its whole life, waiting until as many are free, and
//! nobody else has them meanwhile. The vm backend's are PCI addresses, the
//! sandbox's device indices.

use std::sync::{Arc, Condvar, Mutex};

use crate::error::EnvError;

/// A backend's GPUs, each held by one environment at a time.
pub struct GpuPool<T> {
    free: Mutex<Vec<T>>,
    returned: Condvar,
    total: usize,
}

impl<T> GpuPool<T> {
    pub fn new(gpus: Vec<T>) -> GpuPool<T> {
        GpuPool { total: gpus.len(), free: Mutex::new(gpus), returned: Condvar::new() }
    }

    pub fn total(&self) -> usize {
        self.total
    }

    /// `n` GPUs, waiting until as many are free; `n` must not exceed
    /// [`GpuPool::total`] (the backend's `unmet` skips such a task).
    pub fn take(self: &Arc<Self>, n: usize) -> Result<HeldGpus<T>, EnvError> {
        if n > self.total {
            return Err(EnvError::Phase(format!("GPUs wanted: {n}, and the backend has {}", self.total)));
        }
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        while free.len() < n {
            free = self.returned.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        let at = free.len() - n;
        Ok(HeldGpus { gpus: free.split_off(at), pool: self.clone() })
    }

    fn give_back(&self, gpus: Vec<T>) {
        if gpus.is_empty() {
            return;
        }
        self.free.lock().unwrap_or_else(|p| p.into_inner()).extend(gpus);
        self.returned.notify_all();
    }
}

/// GPUs an environment holds for its life, given back when it is gone.
pub struct HeldGpus<T> {
    pub gpus: Vec<T>,
    pool: Arc<GpuPool<T>>,
}

impl<T> Drop for HeldGpus<T> {
    fn drop(&mut self) {
        self.pool.give_back(std::mem::take(&mut self.gpus));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_hands_a_gpu_to_one_machine_at_a_time() {
        let pool = std::sync::Arc::new(GpuPool::new(vec!["a", "b"]));
        let both = pool.take(2).unwrap();
        assert!(pool.take(3).is_err());
        let waiting = {
            let pool = pool.clone();
            std::thread::spawn(move || pool.take(1).unwrap())
        };
        // The waiter can only finish once the two are given back.
        drop(both);
        let one = waiting.join().unwrap();
        let rest = pool.take(1).unwrap();
        let mut all = [one.gpus.clone(), rest.gpus.clone()].concat();
        all.sort();
        assert_eq!(all, ["a", "b"]);
    }
}
