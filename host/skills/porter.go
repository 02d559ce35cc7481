package skills

// A byte-for-byte port of the Porter stemmer of SQLite's FTS5 "porter"
// tokenizer (ext/fts5/fts5_tokenize.c), so that a query term can be mapped
// to the token FTS5 indexed without asking SQLite. It works on the bytes of
// an already case-folded (unicode61) token; TestPorterMatchesFTS5 checks it
// against SQLite over the bank's vocabulary and the labelled queries.

const porterMaxToken = 64 // FTS5_PORTER_MAX_TOKEN

func porterIsVowel(c byte, yIsVowel bool) bool {
	return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || (yIsVowel && c == 'y')
}

func porterGobbleVC(z []byte, prevCons bool) int {
	cons := prevCons
	i := 0
	for ; i < len(z); i++ {
		cons = !porterIsVowel(z[i], cons)
		if !cons {
			break
		}
	}
	for i++; i < len(z); i++ {
		cons = !porterIsVowel(z[i], cons)
		if cons {
			return i + 1
		}
	}
	return 0
}

func porterMGt0(z []byte) bool { return porterGobbleVC(z, false) != 0 }

func porterMGt1(z []byte) bool {
	n := porterGobbleVC(z, false)
	return n != 0 && porterGobbleVC(z[n:], true) != 0
}

func porterMEq1(z []byte) bool {
	n := porterGobbleVC(z, false)
	return n != 0 && porterGobbleVC(z[n:], true) == 0
}

func porterOstar(z []byte) bool {
	if len(z) == 0 {
		return false
	}
	if c := z[len(z)-1]; c == 'w' || c == 'x' || c == 'y' {
		return false
	}
	mask, cons := 0, false
	for _, c := range z {
		cons = !porterIsVowel(c, cons)
		mask <<= 1
		if cons {
			mask++
		}
	}
	return mask&7 == 5
}

func porterMGt1ST(z []byte) bool {
	return len(z) > 0 && (z[len(z)-1] == 's' || z[len(z)-1] == 't') && porterMGt1(z)
}

func porterVowel(z []byte) bool {
	for i, c := range z {
		if porterIsVowel(c, i > 0) {
			return true
		}
	}
	return false
}

// porterRule replaces suffix by repl when the stem before it satisfies cond.
type porterRule struct {
	suffix, repl string
	cond         func([]byte) bool
}

// porterApply applies the first rule whose suffix the word ends with (and is
// longer than), whether or not its condition holds, as FTS5's generated
// step functions do. It reports whether a replacement was made.
func porterApply(buf []byte, rules []porterRule) ([]byte, bool) {
	n := len(buf)
	for _, r := range rules {
		k := len(r.suffix)
		if n > k && string(buf[n-k:]) == r.suffix {
			if r.cond(buf[:n-k]) {
				return append(buf[:n-k], r.repl...), true
			}
			return buf, false
		}
	}
	return buf, false
}

func porterAlways([]byte) bool { return true }

var (
	porterStep1B = []porterRule{
		{"eed", "ee", porterMGt0}, {"ed", "", porterVowel}, {"ing", "", porterVowel},
	}
	porterStep1B2 = []porterRule{{"at", "ate", porterAlways}, {"bl", "ble", porterAlways}, {"iz", "ize", porterAlways}}
	porterStep2   = []porterRule{
		{"ational", "ate", porterMGt0}, {"tional", "tion", porterMGt0},
		{"enci", "ence", porterMGt0}, {"anci", "ance", porterMGt0},
		{"izer", "ize", porterMGt0},
		{"logi", "log", porterMGt0},
		{"bli", "ble", porterMGt0}, {"alli", "al", porterMGt0}, {"entli", "ent", porterMGt0}, {"eli", "e", porterMGt0}, {"ousli", "ous", porterMGt0},
		{"ization", "ize", porterMGt0}, {"ation", "ate", porterMGt0}, {"ator", "ate", porterMGt0},
		{"alism", "al", porterMGt0}, {"iveness", "ive", porterMGt0}, {"fulness", "ful", porterMGt0}, {"ousness", "ous", porterMGt0},
		{"aliti", "al", porterMGt0}, {"iviti", "ive", porterMGt0}, {"biliti", "ble", porterMGt0},
	}
	porterStep3 = []porterRule{
		{"ical", "ic", porterMGt0}, {"ness", "", porterMGt0}, {"icate", "ic", porterMGt0}, {"iciti", "ic", porterMGt0},
		{"ful", "", porterMGt0}, {"ative", "", porterMGt0}, {"alize", "al", porterMGt0},
	}
	porterStep4 = []porterRule{
		{"al", "", porterMGt1}, {"ance", "", porterMGt1}, {"ence", "", porterMGt1}, {"er", "", porterMGt1},
		{"ic", "", porterMGt1}, {"able", "", porterMGt1}, {"ible", "", porterMGt1},
		{"ant", "", porterMGt1}, {"ement", "", porterMGt1}, {"ment", "", porterMGt1}, {"ent", "", porterMGt1},
		{"ion", "", porterMGt1ST}, {"ou", "", porterMGt1}, {"ism", "", porterMGt1},
		{"ate", "", porterMGt1}, {"iti", "", porterMGt1}, {"ous", "", porterMGt1}, {"ive", "", porterMGt1}, {"ize", "", porterMGt1},
	}
)

// porterTable holds a step's rules by the second-last byte of their suffix,
// as the C version's switch dispatches on it (only the rules of one case, in
// order, are candidates).
type porterTable [256][]porterRule

func newPorterTable(rules []porterRule) *porterTable {
	var t porterTable
	for _, r := range rules {
		c := r.suffix[len(r.suffix)-2]
		t[c] = append(t[c], r)
	}
	return &t
}

var (
	porterT1B  = newPorterTable(porterStep1B)
	porterT1B2 = newPorterTable(porterStep1B2)
	porterT2   = newPorterTable(porterStep2)
	porterT3   = newPorterTable(porterStep3)
	porterT4   = newPorterTable(porterStep4)
)

func porterStep(buf []byte, t *porterTable) ([]byte, bool) {
	if len(buf) < 2 {
		return buf, false
	}
	return porterApply(buf, t[buf[len(buf)-2]])
}

// porterStem returns the token FTS5's porter tokenizer produces for a
// case-folded token.
func porterStem(tok string) string {
	var arr [porterMaxToken + 8]byte
	buf := porterStemBytes(&arr, tok)
	if len(buf) <= len(tok) && string(buf) == tok[:len(buf)] {
		return tok[:len(buf)] // most stems cut a suffix: no copy
	}
	return string(buf)
}

// porterStemBytes is porterStem in arr's memory (the request path looks
// the stem up in a map without allocating a string).
func porterStemBytes(arr *[porterMaxToken + 8]byte, tok string) []byte {
	buf := append(arr[:0], tok...)
	if len(tok) > porterMaxToken || len(tok) < 3 {
		return buf
	}

	// Step 1A.
	if n := len(buf); buf[n-1] == 's' {
		if buf[n-2] == 'e' {
			if (n > 4 && buf[n-4] == 's' && buf[n-3] == 's') || (n > 3 && buf[n-3] == 'i') {
				buf = buf[:n-2]
			} else {
				buf = buf[:n-1]
			}
		} else if buf[n-2] != 's' {
			buf = buf[:n-1]
		}
	}
	// Step 1B.
	var did bool
	if buf, did = porterStep(buf, porterT1B); did {
		var did2 bool
		if buf, did2 = porterStep(buf, porterT1B2); !did2 && len(buf) >= 2 {
			n := len(buf)
			c := buf[n-1]
			if !porterIsVowel(c, false) && c != 'l' && c != 's' && c != 'z' && c == buf[n-2] {
				buf = buf[:n-1]
			} else if porterMEq1(buf) && porterOstar(buf) {
				buf = append(buf, 'e')
			}
		}
	}
	// Step 1C.
	if n := len(buf); n > 0 && buf[n-1] == 'y' && porterVowel(buf[:n-1]) {
		buf[n-1] = 'i'
	}
	// Steps 2 to 4.
	buf, _ = porterStep(buf, porterT2)
	buf, _ = porterStep(buf, porterT3)
	buf, _ = porterStep(buf, porterT4)
	// Step 5a.
	if n := len(buf); n > 0 && buf[n-1] == 'e' {
		if porterMGt1(buf[:n-1]) || (porterMEq1(buf[:n-1]) && !porterOstar(buf[:n-1])) {
			buf = buf[:n-1]
		}
	}
	// Step 5b.
	if n := len(buf); n > 1 && buf[n-1] == 'l' && buf[n-2] == 'l' && porterMGt1(buf[:n-1]) {
		buf = buf[:n-1]
	}
	return buf
}
