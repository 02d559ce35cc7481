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

var pronounWord = regexp.MustCompile(`(?i)\b(i'm|i am|i've|i have|i'd|i'll|i was|i|my|mine|me|myself|we're|we are|we've|we have|we'd|we'll|we were|we|our|ours|us|ourselves|you're|you are|you've|you have|you'll|you'd|your|yours|yourself|you)\b`)

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

func pronounFor(w string) (string, bool) {
	switch w {
	case "i":
		return "the user", true
	case "i'm", "i am":
		return "the user is", false
	case "i've", "i have":
		return "the user has", false
	case "i'd":
		return "the user would", false
	case "i'll":
		return "the user will", false
	case "i was":
		return "the user was", false
	case "my", "mine":
		return "the user's", false
	case "me", "myself":
		return "the user", false
	case "we":
		return "the team", true
	case "we're", "we are":
		return "the team is", false
	case "we've", "we have":
		return "the team has", false
	case "we'd":
		return "the team would", false
	case "we'll":
		return "the team will", false
	case "we were":
		return "the team was", false
	case "our", "ours":
		return "the team's", false
	case "us", "ourselves":
		return "the team", false
	case "you":
		return "the assistant", true
	case "you're", "you are":
		return "the assistant is", false
	case "you've", "you have":
		return "the assistant has", false
	case "you'll":
		return "the assistant will", false
	case "you'd":
		return "the assistant would", false
	case "your", "yours":
		return "the assistant's", false
	case "yourself":
		return "the assistant", false
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
