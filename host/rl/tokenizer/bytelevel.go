package tokenizer

import "unicode/utf8"

// Byte-level BPE (GPT-2 and its descendants, Qwen included) spells every byte
// as one printable rune so that vocabularies and merges are plain strings:
// printable Latin-1 bytes stand for themselves, the other 68 bytes are moved
// to U+0100 and up in byte order. The tables are built once.
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevelEncode spells raw bytes in the byte-level alphabet.
func byteLevelEncode(raw string) string {
	out := make([]byte, 0, 2*len(raw))
	for i := 0; i < len(raw); i++ {
		out = utf8.AppendRune(out, byteToRune[raw[i]])
	}
	return string(out)
}

// byteLevelDecode turns a byte-level token string back into raw bytes. ok is
// false when a rune is outside the alphabet; the Hugging Face decoder then
// keeps the token's own UTF-8 bytes, and so do we.
func byteLevelDecode(tok string) (raw []byte, ok bool) {
	raw = make([]byte, 0, len(tok))
	for _, r := range tok {
		b, in := runeToByte[r]
		if !in {
			return nil, false
		}
		raw = append(raw, b)
	}
	return raw, true
}
