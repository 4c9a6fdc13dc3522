//! The join protocol's messages, as a CA node reads a joiner's request
//! and a joiner reads the CA node's answer, and a join token as a user
//! pastes it (`crates/node/src/join/`). Input: a selector byte (request,
//! answer, token), then the body. Beyond not panicking: whatever decodes
//! encodes to a message that decodes to the same value (a request to the
//! very bytes it came from).

use coopcache_node::join::JoinToken;
use coopcache_node::join::wire::{Answer, Request};

/// One input (the target's whole contract is in the module doc).
pub fn run(data: &[u8]) {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    match which % 3 {
        0 => {
            if let Ok(request) = Request::decode(body) {
                assert_eq!(request.encode(), body, "a request re-encodes as it came");
            }
        }
        1 => {
            if let Ok(answer) = Answer::decode(body) {
                assert_eq!(Answer::decode(&answer.encode()), Ok(answer));
            }
        }
        _ => {
            let Ok(text) = std::str::from_utf8(body) else {
                return;
            };
            if let Ok(token) = JoinToken::decode(text) {
                let again = JoinToken::decode(&token.encode()).expect("an encoded token decodes");
                assert!(again == token, "a token re-encodes to itself");
            }
        }
    }
}
