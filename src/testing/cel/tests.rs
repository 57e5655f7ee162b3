//! The interpreter on values beyond the matrix: CEL's boundaries as cel-go has them.

use super::*;

fn run(src: &str) -> Result<Val, String> {
    compile(src)?.eval(Vec::new(), PER_CALL_LIMIT).result
}

fn yes(src: &str) {
    match run(src) {
        Ok(Val::Bool(true)) => {}
        other => panic!("{src}: {other:?}"),
    }
}

fn fails(src: &str, text: &str) {
    match run(src) {
        Err(e) => assert!(e.contains(text), "{src}: {e}"),
        other => panic!("{src}: {other:?}"),
    }
}

#[test]
fn arithmetic() {
    yes("1 + 2 * 3 == 7");
    yes("-9223372036854775808 < 0");
    fails("9223372036854775807 + 1 > 0", "integer overflow");
    fails("-9223372036854775808 - 1 < 0", "integer overflow");
    fails("-9223372036854775808 / -1 < 0", "integer overflow");
    fails("1 / 0 == 0", "division by zero");
    fails("1 % 0 == 0", "modulus by zero");
    fails("0u - 1u == 0u", "unsigned integer overflow");
    yes("7 / 2 == 3 && -7 / 2 == -3 && -7 % 2 == -1");
    yes("1.0 / 0.0 > 1e308");
}
