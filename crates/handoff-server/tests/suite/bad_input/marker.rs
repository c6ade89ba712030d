//! The payload every case sends, built so an answer can be searched for the longest stretch of
//! it that came back: numbered tokens `~<tag><7 digits>`, so any echoed token says where in the
//! payload it sits, and the stretch around it is measured exactly.

/// Length of one token: `~`, the 8-character tag, 7 digits.
const TOKEN: usize = 16;

/// The run's payload generator.
#[derive(Debug, Clone)]
pub struct Marker {
    tag: String,
}

impl Marker {
    /// A marker with a random tag, so nothing else in an answer can look like it.
    pub fn new() -> Self {
        let tag: String = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
        Self { tag }
    }

    /// The first `len` bytes of the payload (ASCII, so any length is a valid string).
    pub fn text(&self, len: usize) -> String {
        let mut out = String::with_capacity(len + TOKEN);
        let mut i = 0;
        while out.len() < len {
            out.push_str(&self.token(i));
            i += 1;
        }
        out.truncate(len);
        out
    }

    fn token(&self, i: usize) -> String {
        format!("~{}{:07}", self.tag, i)
    }

    /// The byte of the (unbounded) payload at `pos`, without building the token.
    fn byte_at(&self, pos: usize) -> u8 {
        let (index, offset) = (pos / TOKEN, pos % TOKEN);
        match offset {
            0 => b'~',
            1..=8 => self.tag.as_bytes()[offset - 1],
            _ => {
                let digit = (index / 10usize.pow(15 - offset as u32)) % 10;
                b'0' + digit as u8
            }
        }
    }

    /// The longest stretch of the payload found in `answer`, in bytes. Stretches shorter than
    /// two tokens may go unseen; they are far below what the corpus allows anyway.
    pub fn longest_echo(&self, answer: &str) -> usize {
        let answer = answer.as_bytes();
        let needle = format!("~{}", self.tag);
        let mut longest = 0;
        let mut from = 0;
        while let Some(found) = find(&answer[from..], needle.as_bytes()) {
            let at = from + found;
            from = at + 1;
            let digits = &answer[(at + needle.len()).min(answer.len())..];
            let Some(index) = digits
                .get(..7)
                .and_then(|d| std::str::from_utf8(d).ok())
                .and_then(|d| d.parse::<usize>().ok())
            else {
                continue;
            };
            let start = index * TOKEN;
            // Walk back and forward while the answer keeps matching the payload.
            let mut back = 0;
            while back < at
                && back < start
                && answer[at - back - 1] == self.byte_at(start - back - 1)
            {
                back += 1;
            }
            let mut ahead = 0;
            while at + ahead < answer.len() && answer[at + ahead] == self.byte_at(start + ahead) {
                ahead += 1;
            }
            longest = longest.max(back + ahead);
            // The tokens inside this stretch are measured already.
            from = at + ahead.max(1);
        }
        longest
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn the_longest_echo_is_measured_exactly() {
    let marker = Marker::new();
    let payload = marker.text(4096);
    assert_eq!(payload.len(), 4096);
    assert_eq!(marker.longest_echo("nothing here"), 0);
    let quoted = format!("error: value {}… (4096 bytes)", &payload[100..164]);
    assert_eq!(marker.longest_echo(&quoted), 64);
    let whole = format!("{{\"message\":\"{payload}\"}}");
    assert_eq!(marker.longest_echo(&whole), 4096);
    let twice = format!("{} and {}", &payload[..40], &payload[1000..1100]);
    assert_eq!(marker.longest_echo(&twice), 100);
    let big = marker.text(1 << 20);
    assert_eq!(marker.longest_echo(&format!("x{big}y")), 1 << 20);
}
