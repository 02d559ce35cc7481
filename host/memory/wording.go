package memory

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Wording: how extracted statements are rewritten into third-person
// memories, and the entities named in them.

var ourTeam = regexp.MustCompile(`(?i)\bour (team|company|org|organi[sz]ation)\b`)

// pronounTable is the rewrite table: a first- or second-person word (lower case)
// and its third-person replacement. subject marks the bare subjects whose
// following verb must agree ("we use" → "the team uses"); the contracted
// forms carry their verb already. The order is the match order: a longer
// form comes before its prefix ("i am" before "i", "you're" before "you").
var pronounTable = []struct {
	word, repl string
	subject    bool
}{
	{"i'm", "the user is", false},
	{"i am", "the user is", false},
	{"i've", "the user has", false},
	{"i have", "the user has", false},
	{"i'd", "the user would", false},
	{"i'll", "the user will", false},
	{"i was", "the user was", false},
	{"i", "the user", true},
	{"my", "the user's", false},
	{"mine", "the user's", false},
	{"me", "the user", false},
	{"myself", "the user", false},
	{"we're", "the team is", false},
	{"we are", "the team is", false},
	{"we've", "the team has", false},
	{"we have", "the team has", false},
	{"we'd", "the team would", false},
	{"we'll", "the team will", false},
	{"we were", "the team was", false},
	{"we", "the team", true},
	{"our", "the team's", false},
	{"ours", "the team's", false},
	{"us", "the team", false},
	{"ourselves", "the team", false},
	{"you're", "the assistant is", false},
	{"you are", "the assistant is", false},
	{"you've", "the assistant has", false},
	{"you have", "the assistant has", false},
	{"you'll", "the assistant will", false},
	{"you'd", "the assistant would", false},
	{"your", "the assistant's", false},
	{"yours", "the assistant's", false},
	{"yourself", "the assistant", false},
	{"you", "the assistant", true},
}

// pronounWord finds the words of pronounTable, in the table's order;
// pronounIndex looks a found word up.
var pronounWord, pronounIndex = func() (*regexp.Regexp, map[string]int) {
	words := make([]string, len(pronounTable))
	index := make(map[string]int, len(pronounTable))
	for i, p := range pronounTable {
		words[i] = regexp.QuoteMeta(p.word)
		index[p.word] = i
	}
	return regexp.MustCompile(`(?i)\b(` + strings.Join(words, "|") + `)\b`), index
}()

// rewrite turns first- and second-person words into third person ("my" →
// "the user's", "we" → "the team", "you" → "the assistant") and fixes the
// verb that follows a rewritten subject ("we use" → "the team uses").
func rewrite(s string) string {
	s = ourTeam.ReplaceAllString(s, "the $1")
	if !pronounWord.MatchString(s) {
		return s
	}
	var b strings.Builder
	last := 0
	locs := pronounWord.FindAllStringIndex(s, -1)
	for i := 0; i < len(locs); i++ {
		loc := locs[i]
		w := strings.ToLower(s[loc[0]:loc[1]])
		b.WriteString(s[last:loc[0]])
		last = loc[1]
		repl, subject := pronounFor(w)
		b.WriteString(repl)
		if subject {
			// Fix the verb after the subject (and after adverbs).
			rest := s[last:]
			fixed, n := agreeVerb(rest)
			if n > 0 {
				b.WriteString(fixed)
				last += n
				for i+1 < len(locs) && locs[i+1][0] < last {
					i++
				}
			}
		}
	}
	b.WriteString(s[last:])
	return b.String()
}

// pronounFor is w's replacement and whether it is a subject; a word not in
// the table comes back unchanged.
func pronounFor(w string) (string, bool) {
	if i, ok := pronounIndex[w]; ok {
		return pronounTable[i].repl, pronounTable[i].subject
	}
	return w, false
}

var (
	adverbs = setOf(`really strongly generally usually always never often also still now just mostly definitely actually absolutely
much rather sometimes currently mainly only typically normally personally already`)
	modals   = setOf(`can could will would should must may might shall did does was is had`)
	verbWord = regexp.MustCompile(`^(\s+)([A-Za-z']+)`)
)

// agreeVerb conjugates the first verb of rest for a third-person subject;
// it returns the rewritten prefix and how many bytes of rest it covers.
func agreeVerb(rest string) (string, int) {
	var b strings.Builder
	pos := 0
	for range 4 {
		m := verbWord.FindStringSubmatchIndex(rest[pos:])
		if m == nil {
			return "", 0
		}
		space := rest[pos+m[2] : pos+m[3]]
		word := rest[pos+m[4] : pos+m[5]]
		lw := strings.ToLower(word)
		end := pos + m[1]
		switch {
		case adverbs[lw]:
			b.WriteString(space + word)
			pos = end
			continue
		case modals[lw]:
			return "", 0
		case lw == "don't":
			b.WriteString(space + "doesn't")
			return b.String(), end
		case lw == "do":
			b.WriteString(space + "does")
			return b.String(), end
		case lw == "are" || lw == "am":
			b.WriteString(space + "is")
			return b.String(), end
		case lw == "have":
			b.WriteString(space + "has")
			return b.String(), end
		case lw == "were":
			b.WriteString(space + "was")
			return b.String(), end
		case strings.ContainsRune(lw, '\''), strings.HasSuffix(lw, "ed"), len(lw) < 2:
			return "", 0
		}
		b.WriteString(space + thirdPerson(word))
		return b.String(), end
	}
	return "", 0
}

func thirdPerson(v string) string {
	lv := strings.ToLower(v)
	switch {
	case lv == "go" || lv == "do":
		return v + "es"
	case strings.HasSuffix(lv, "s") || strings.HasSuffix(lv, "x") || strings.HasSuffix(lv, "z") ||
		strings.HasSuffix(lv, "ch") || strings.HasSuffix(lv, "sh"):
		return v + "es"
	case strings.HasSuffix(lv, "y") && len(lv) > 2 && !strings.ContainsRune("aeiou", rune(lv[len(lv)-2])):
		return v[:len(v)-1] + "ies"
	}
	return v + "s"
}

// rewriteVerbAfter conjugates the verb starting rest ("always write tests" →
// "always writes tests" after "The user").
func rewriteVerbAfter(rest string) string {
	fixed, n := agreeVerb(" " + rest)
	if n == 0 {
		return rest
	}
	return strings.TrimPrefix(fixed, " ") + rest[n-1:]
}

// rewriteSubject conjugates a short "I <verb>" phrase: "I like to" → "likes to".
func rewriteSubject(phrase, _ string) string {
	out := rewrite(phrase)
	return strings.TrimSpace(strings.TrimPrefix(out, "the user"))
}

func capitalize(s string) string {
	s = strings.TrimSpace(s)
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 || !unicode.IsLower(r) {
		return s
	}
	if w := strings.Fields(s)[0]; strings.ContainsAny(w, "_0123456789") || strings.ToLower(w) != w {
		return s // an identifier (last_updated, iOS, v1.2) keeps its case
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// finishSentence trims and ends content with a full stop (Latin text).
func finishSentence(s string) string {
	s = strings.TrimSpace(strings.Join(strings.Fields(s), " "))
	s = strings.TrimRight(s, ",;:，；：")
	if s == "" {
		return s
	}
	r, _ := utf8.DecodeLastRuneInString(s)
	if isCJK(r) || r == '。' || r == '.' || r == '!' || r == '）' || r == ')' || r == '”' {
		return s
	}
	return s + "."
}

// pronounOnly reports whether a statement's subject is only "it"/"that".
func pronounOnly(content string) bool {
	f := strings.Fields(strings.ToLower(content))
	return len(f) > 0 && (pronouns[f[0]] || strings.HasPrefix(content, "它") || strings.HasPrefix(content, "这"))
}

var (
	camelOrSnake = regexp.MustCompile(`\b(?:[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[a-z0-9]+_[a-z0-9_]+|[A-Za-z0-9]+\.[A-Za-z]{1,5}|v?\d+\.\d+(?:\.\d+)?)\b`)
	capWord      = regexp.MustCompile(`[^.!?\s]\s+([A-Z][A-Za-z0-9+#]{1,30})\b`)
)

// entitiesOf names things in text: tools from the lexicon, identifiers,
// versions, file names and capitalised words not starting a sentence.
func entitiesOf(text string) []string {
	var out []string
	out = append(out, lexiconEntities(text)...)
	out = append(out, camelOrSnake.FindAllString(text, 6)...)
	for _, m := range capWord.FindAllStringSubmatch(text, 8) {
		w := m[1]
		if !stopEN[strings.ToLower(w)] && w != "I" {
			out = append(out, w)
		}
	}
	return mergeStrings(nil, out, 8)
}
