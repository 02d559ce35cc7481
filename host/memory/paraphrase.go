package memory

import (
	"strings"
)

// Paraphrases: the same rule restated in other words ("all timestamps must
// carry the +08:00 offset", "every time field needs the date, the time and
// the +08:00 offset") is one unit whose mentions count the restatements.
// Two wordings are one rule when they share most of their content words
// (after stemming), or some of them and a key entity (+08:00, YYYYMMDD,
// last_updated, a file pattern), or — with embeddings on — when their
// vectors are nearly parallel; never when one forbids what the other asks.

// keyEntity finds the distinctive tokens of a wording: offsets, identifiers
// with _ - . or digits, long all-capital patterns.
var keyEntity = mustGuard(`[+-]\d{2}:\d{2}|[A-Za-z][A-Za-z0-9]*(?:[_\-.][A-Za-z0-9]+)+_?|\b[A-Za-z]*\d[A-Za-z0-9]*\b|\b[A-Z]{6,}[A-Z0-9]*_?`)

// keyEntities returns the lower-cased key entities of content.
func keyEntities(content string) map[string]struct{} {
	out := map[string]struct{}{}
	for _, m := range keyEntity.FindAllString(content, 24) {
		m = strings.ToLower(strings.Trim(m, "_.-"))
		if len(m) < 3 || instanceValue.MatchString(m) {
			continue
		}
		out[m] = struct{}{}
	}
	return out
}

// negation at the verb: "never", "do not", "must not" (a bare "not" in an
// aside — "not a bare date" — is not a change of polarity).
var negation = mustGuard(`(?i)\b(?:never|don't|do not|does not|doesn't|must not|mustn't|should not|shouldn't|cannot|can't|may not|avoid|no longer|stop)\b|不要|别|不能|禁止|永远不`)

func polarity(u *Unit) byte {
	if v := u.Value; v != "" && (v[0] == '+' || v[0] == '-') {
		return v[0]
	}
	line, _ := splitContent(u.Content)
	if negation.MatchString(line) {
		return '-'
	}
	return '+'
}

// ruleLike reports whether u states a rule or preference (which may merge
// across the preference and fact types).
func ruleLike(u *Unit) bool {
	if u.Type == Preference {
		return true
	}
	for _, t := range u.Tags {
		if t == "rule" {
			return true
		}
	}
	return false
}

// slotted: a subject naming a slot of its own (not a rule's action key).
func slotted(subject string) bool {
	return subject != "" && !strings.HasPrefix(subject, "rule:")
}

// mergeable reports whether o and u may be one unit at all.
func mergeable(o, u *Unit) bool {
	switch {
	case o.Type == u.Type:
	case (o.Type == Preference || o.Type == Semantic) && (u.Type == Preference || u.Type == Semantic) && (ruleLike(o) || ruleLike(u)):
	default:
		return false
	}
	if slotted(o.Subject) && slotted(u.Subject) && o.Subject != u.Subject {
		return false // two slots: two things
	}
	return polarity(o) == polarity(u)
}

// paraphrase reports whether u restates o (cos is their cosine, 0 when
// either has no embedding).
func paraphrase(o, u *Unit, cos float64) bool {
	if !mergeable(o, u) {
		return false
	}
	if normKey(o.Content) == normKey(u.Content) {
		return true
	}
	if u.Correction() {
		return false // a correction with other words replaces; it does not restate
	}
	oset, uset := TermSet(o.Content), TermSet(u.Content)
	if otherValues(oset, uset) {
		return false // "node seven" and "node nine", "8080" and "9090"
	}
	if jaccard(oset, uset) >= 0.8 {
		return true
	}
	inter := 0
	for t := range uset {
		if _, ok := oset[t]; ok {
			inter++
		}
	}
	small := min(len(oset), len(uset))
	if small == 0 {
		return false
	}
	overlap := float64(inter) / float64(small)
	if inter >= 3 && overlap >= 0.75 && jaccard(oset, uset) >= 0.6 {
		return true
	}
	if inter >= 2 && overlap >= 0.3 {
		oe := keyEntities(o.Content)
		for e := range keyEntities(u.Content) {
			if _, ok := oe[e]; ok {
				return true
			}
		}
	}
	return cos >= 0.9 && inter >= 2
}

// wordingScore ranks wordings of one rule: the most general (about all
// things of a kind), the most complete (more content words, key entities,
// an attached block) wins; a wording about one task's values loses.
func wordingScore(content string) float64 {
	line, block := splitContent(content)
	s := 0.3 * float64(len(TermSet(content)))
	if isGeneral(line) {
		s += 1.5
	}
	s += 0.5 * float64(len(keyEntities(content)))
	if block != "" {
		s += 3
	}
	if instanceValue.MatchString(line) {
		s--
	}
	return s
}

// betterWording reports whether the new wording should replace the old one:
// it says strictly more, or it is clearly more general and complete.
func betterWording(old, new string) bool {
	oset, nset := TermSet(old), TermSet(new)
	superset := len(nset) > len(oset)
	for t := range oset {
		if _, ok := nset[t]; !ok {
			superset = false
			break
		}
	}
	if superset {
		return true
	}
	_, oblock := splitContent(old)
	_, nblock := splitContent(new)
	if oblock != "" && nblock == "" {
		return false // the block is the requirement
	}
	return wordingScore(new) > wordingScore(old)+0.5
}

// otherValues reports whether each wording has a number (or a number word)
// the other lacks: the same sentence about different values.
func otherValues(a, b map[string]struct{}) bool {
	value := func(t string) bool { return hasDigit(t) || numberWords[t] }
	differs := func(x, y map[string]struct{}) bool {
		for t := range x {
			if _, ok := y[t]; !ok && value(t) {
				return true
			}
		}
		return false
	}
	return differs(a, b) && differs(b, a)
}

var numberWords = setOf(`zero one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty hundred thousand first second third fourth fifth`)
