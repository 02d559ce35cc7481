package tokenizer

import "unicode/utf8"

// Decode returns the text of ids, special tokens included, as Hugging Face's
// decode(ids) does. Bytes that are not valid UTF-8 (a character cut between
// tokens, or a model that sampled nonsense) become U+FFFD, one per maximal
// invalid subsequence, as Rust's from_utf8_lossy and Python's
// errors="replace" do. Ids outside the vocabulary are skipped.
func (t *Tokenizer) Decode(ids []int) string {
	return lossyUTF8(nil, t.appendBytes(nil, ids, false))
}

// DecodeSkipSpecial is Decode with skip_special_tokens=True: special added
// tokens (<|im_end|>, …) are left out; non-special ones such as Qwen's
// <think> and <tool_call> are kept.
func (t *Tokenizer) DecodeSkipSpecial(ids []int) string {
	return lossyUTF8(nil, t.appendBytes(nil, ids, true))
}

func (t *Tokenizer) appendBytes(dst []byte, ids []int, skipSpecial bool) []byte {
	for _, id := range ids {
		if id < 0 || id >= len(t.known) || !t.known[id] || (skipSpecial && t.special[id]) {
			continue
		}
		dst = append(dst, t.idBytes[id]...)
	}
	return dst
}

// StreamDecoder turns ids arriving one at a time into text pieces. A
// character split across tokens is held until its last byte arrives, so the
// concatenation of everything Add and Flush return equals Decode (or
// DecodeSkipSpecial) of all the ids.
type StreamDecoder struct {
	t           *Tokenizer
	skipSpecial bool
	pending     []byte // undecided tail: a possibly incomplete UTF-8 sequence
}

// NewStreamDecoder starts a decoder; skipSpecial leaves special tokens out.
func (t *Tokenizer) NewStreamDecoder(skipSpecial bool) *StreamDecoder {
	return &StreamDecoder{t: t, skipSpecial: skipSpecial}
}

// Add consumes ids and returns the text they complete ("" while a character
// is still incomplete).
func (d *StreamDecoder) Add(ids ...int) string {
	d.pending = d.t.appendBytes(d.pending, ids, d.skipSpecial)
	n := completePrefix(d.pending)
	if n == 0 {
		return ""
	}
	out := lossyUTF8(nil, d.pending[:n])
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out
}

// Flush returns what is still held (an incomplete character becomes
// U+FFFD) and resets the decoder.
func (d *StreamDecoder) Flush() string {
	out := lossyUTF8(nil, d.pending)
	d.pending = d.pending[:0]
	return out
}

// seqLen returns the length of the UTF-8 sequence that leading byte b starts
// and the allowed range of its second byte; n == 0 for a byte that cannot
// start a sequence.
func seqLen(b byte) (n int, lo, hi byte) {
	switch {
	case b < 0x80:
		return 1, 0, 0
	case b >= 0xC2 && b <= 0xDF:
		return 2, 0x80, 0xBF
	case b == 0xE0:
		return 3, 0xA0, 0xBF
	case b == 0xED:
		return 3, 0x80, 0x9F
	case b >= 0xE1 && b <= 0xEF:
		return 3, 0x80, 0xBF
	case b == 0xF0:
		return 4, 0x90, 0xBF
	case b >= 0xF1 && b <= 0xF3:
		return 4, 0x80, 0xBF
	case b == 0xF4:
		return 4, 0x80, 0x8F
	}
	return 0, 0, 0
}

// validPart returns how many bytes at the start of b form a valid (possibly
// incomplete) UTF-8 sequence, and whether the sequence is complete.
func validPart(b []byte) (n int, complete bool) {
	want, lo, hi := seqLen(b[0])
	if want == 0 {
		return 0, false
	}
	if want == 1 {
		return 1, true
	}
	for i := 1; i < want; i++ {
		if i >= len(b) {
			return i, false
		}
		l, h := byte(0x80), byte(0xBF)
		if i == 1 {
			l, h = lo, hi
		}
		if b[i] < l || b[i] > h {
			return i, false
		}
	}
	return want, true
}

// lossyUTF8 appends b to dst as a string, replacing each maximal subpart of
// an invalid sequence with U+FFFD (the Unicode/WHATWG practice that Rust,
// Python and JavaScript decoders follow).
func lossyUTF8(dst []byte, b []byte) string {
	if utf8.Valid(b) {
		if dst == nil {
			return string(b)
		}
		return string(append(dst, b...))
	}
	out := dst
	for i := 0; i < len(b); {
		n, complete := validPart(b[i:])
		switch {
		case complete:
			out = append(out, b[i:i+n]...)
			i += n
		case n == 0:
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
		default:
			out = utf8.AppendRune(out, utf8.RuneError)
			i += n
		}
	}
	return string(out)
}

// completePrefix returns how much of b can be decoded now: all of it unless
// it ends inside a sequence that later bytes could still complete.
func completePrefix(b []byte) int {
	// A sequence is at most 4 bytes, so only the last 3 can be pending.
	for start := max(0, len(b)-3); start < len(b); start++ {
		if want, _, _ := seqLen(b[start]); want > 1 && start+want > len(b) {
			if n, complete := validPart(b[start:]); !complete && n == len(b)-start {
				return start
			}
		}
	}
	return len(b)
}
