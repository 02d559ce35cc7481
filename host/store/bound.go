package store

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// DefaultMaxBodyBytes bounds each stored body of a turn (store.max_body_kb).
const DefaultMaxBodyBytes = 1 << 20

// cutMarker is appended where stored text was shortened.
func cutMarker(n int) string {
	return "…[metaclaw: " + strconv.Itoa(n) + " bytes not stored]"
}

// BoundTurn shortens a turn's bodies to at most about max bytes each, so
// one oversized request or answer can neither exhaust memory in the
// recorder's queue nor fail a batch write. Text is cut at a character
// boundary with a marker; JSON bodies stay valid JSON: their longest strings
// are cut first (base64 images, pasted files, tool output), so the request's
// structure, roles and recent user text survive for learning. It reports
// whether anything was cut.
func BoundTurn(t *Turn, max int) bool {
	if max <= 0 {
		max = DefaultMaxBodyBytes
	}
	cut := false
	for _, f := range []*string{&t.RequestJSON, &t.ToolCallsJSON} {
		if len(*f) > max {
			*f, cut = ShrinkJSON(*f, max), true
		}
	}
	for _, f := range []*string{&t.ResponseText, &t.Reasoning, &t.Error} {
		if len(*f) > max {
			*f, cut = CutText(*f, max), true
		}
	}
	return cut
}

// CutText keeps at most max bytes of s (at a UTF-8 boundary) and appends a
// marker naming how much was left out.
func CutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	kept := textclip.Prefix(s, max)
	return kept + cutMarker(len(s)-len(kept))
}

// ShrinkJSON returns a valid JSON text of at most about max bytes made from
// doc: every string longer than a limit is cut with a marker, the limit
// halving until the document fits. A document that still does not fit (or
// is not JSON) becomes an object holding its head as a string.
func ShrinkJSON(doc string, max int) string {
	if len(doc) <= max {
		return doc
	}
	if json.Valid([]byte(doc)) {
		for limit := max / 2; limit >= 64; limit /= 2 {
			out, ok := cutStrings(doc, limit, max)
			if ok {
				return out
			}
		}
	}
	head := CutText(doc, max/2)
	b, _ := json.Marshal(map[string]any{"metaclaw_truncated": map[string]any{"bytes": len(doc), "head": head}})
	return string(b)
}

// cutStrings copies the JSON text doc, cutting every string value or key
// longer than limit bytes; it gives up once the output exceeds max.
func cutStrings(doc string, limit, max int) (string, bool) {
	out := make([]byte, 0, min(len(doc), max+1024))
	i := 0
	for i < len(doc) {
		c := doc[i]
		if c != '"' {
			out = append(out, c)
			i++
			if len(out) > max {
				return "", false
			}
			continue
		}
		// A string: find its end, stepping over escapes.
		j := i + 1
		cutAt := -1
		for j < len(doc) && doc[j] != '"' {
			step := 1
			if doc[j] == '\\' {
				step = 2
				if j+1 < len(doc) && doc[j+1] == 'u' {
					step = 6
				}
			} else if doc[j] >= utf8.RuneSelf {
				_, step = utf8.DecodeRuneInString(doc[j:])
			}
			if cutAt < 0 && j+step-(i+1) > limit {
				cutAt = j
			}
			j += step
		}
		if cutAt < 0 {
			out = append(out, doc[i:j+1]...)
		} else {
			out = append(out, doc[i:cutAt]...)
			out = append(out, cutMarker(j-cutAt)...)
			out = append(out, '"')
		}
		i = j + 1
		if len(out) > max {
			return "", false
		}
	}
	return string(out), true
}
