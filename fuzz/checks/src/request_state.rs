//! The sealed `requestState` (`portico::server::sealed`) and the server's opening of it with
//! `inputResponses`: a string the server did not seal never opens; what it sealed opens to the
//! same bytes under the same binding only, and not at all once a character is changed or the
//! state has expired; any sealed payload, JSON or not, is opened without a panic.

use std::time::{Duration, SystemTime};

use portico::fuzzing::open_request_state;
use portico::server::sealed::{SealingKey, StateSealer};

fn sealer() -> StateSealer {
    StateSealer::new(SealingKey::new(2, [7; 32])).with_previous_key(SealingKey::new(1, [9; 32]))
}

/// The check.
pub fn check(data: &[u8]) {
    let s = sealer();
    let mut b = crate::Bytes(data);
    let mode = b.below(3);
    let at = b.u8() as usize;
    let (binding, rest) = crate::split2(b.rest());
    match mode {
        // Attacker-written state: never opens.
        0 => {
            let text = String::from_utf8_lossy(rest);
            assert!(s.open(binding, &text).is_err(), "a forged requestState opened");
            assert!(open_request_state(&s, binding, Some(&text), None).is_err());
        }
        // Sealed by the server: opens to the payload, for this binding only, until it expires,
        // and a changed character spoils it.
        1 => {
            let sealed = s.seal(binding, rest);
            assert_eq!(s.open(binding, &sealed).expect("opens"), rest);
            let mut other = binding.to_vec();
            other.push(0);
            assert!(s.open(&other, &sealed).is_err(), "opened under another binding");
            let later = SystemTime::now() + s.ttl() + Duration::from_secs(3600);
            assert!(s.open_at(binding, &sealed, later).is_err(), "opened after it expired");
            let mut chars: Vec<char> = sealed.chars().collect();
            let i = at % chars.len();
            chars[i] = if chars[i] == 'A' { 'B' } else { 'A' };
            let changed: String = chars.into_iter().collect();
            assert!(s.open(binding, &changed).is_err(), "opened after a change at {i}");
        }
        // Sealed payloads the handler layer did not write, and `inputResponses` as sent.
        _ => {
            let (payload, responses) = crate::split2(rest);
            let sealed = s.seal(binding, payload);
            let responses = std::str::from_utf8(responses).ok();
            let _ = open_request_state(&s, binding, Some(&sealed), responses);
            let _ = open_request_state(&s, binding, None, responses);
        }
    }
}
