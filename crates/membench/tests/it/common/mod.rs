//! Shared by the live test files of membench.

/// The live tests pin threads and time them: one at a time within a test binary, so they
/// measure the machine rather than each other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
