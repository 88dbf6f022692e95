//! The CPU-fallback policy (`fallback.rs`): refused under `error`, run and counted under
//! `warn` and `allow`. One test function, because the policy and the counters are
//! process-wide and tests in one binary run in parallel.

use anygrad_core::fallback::{
    fallback_policy, fallback_stats, reset_fallback_stats, run_with_fallback, set_fallback_policy,
    FallbackPolicy,
};
use anygrad_core::Error;

#[test]
fn policy_is_enforced_and_counted() {
    assert_eq!(FallbackPolicy::parse("ALLOW"), Some(FallbackPolicy::Allow));
    assert_eq!(FallbackPolicy::parse("warn"), Some(FallbackPolicy::Warn));
    assert_eq!(FallbackPolicy::parse("error"), Some(FallbackPolicy::Error));
    assert_eq!(FallbackPolicy::parse("maybe"), None);
    reset_fallback_stats();

    set_fallback_policy(FallbackPolicy::Error);
    assert_eq!(fallback_policy(), FallbackPolicy::Error);
    let mut ran = false;
    let refused = run_with_fallback("custom_op", 64, || {
        ran = true;
        Ok(1)
    });
    assert!(matches!(refused, Err(Error::FallbackRefused { .. })));
    assert!(!ran, "a refused fallback must not run");
    assert!(!fallback_stats().contains_key("custom_op"));

    set_fallback_policy(FallbackPolicy::Warn);
    assert_eq!(run_with_fallback("custom_op", 64, || Ok(2)).unwrap(), 2);
    assert_eq!(run_with_fallback("custom_op", 36, || Ok(3)).unwrap(), 3);
    set_fallback_policy(FallbackPolicy::Allow);
    let failed: Result<i32, Error> = run_with_fallback("other_op", 8, || {
        Err(Error::invalid("other_op", "inner failure"))
    });
    assert!(failed.is_err(), "the inner result is passed through");

    let stats = fallback_stats();
    let custom = &stats["custom_op"];
    assert_eq!(custom.calls, 2);
    assert_eq!(custom.bytes_moved, 100);
    assert_eq!(stats["other_op"].calls, 1);

    reset_fallback_stats();
    assert!(fallback_stats().is_empty());
    set_fallback_policy(FallbackPolicy::Warn);
}
