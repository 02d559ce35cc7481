package memory

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Heuristic is the default extractor: deterministic, no LLM, zero tokens.
// It mines the user's own words for stated preferences, rules, corrections,
// personal facts and project state, in English and Chinese:
//
//	I prefer / I'd rather / I like to / I hate …   我喜欢 / 我更喜欢 / 我习惯 / 我不喜欢 …
//	always / never / don't / make sure / from now on  总是 / 永远不要 / 不要 / 必须 / 以后 …
//	we use / our stack is / we switched to …         我们用 / 我们改用 / 项目使用 …
//	X must / X should be Y / that's wrong, it should… 必须 / 应该 / 不对，应该 …
//	call me … / my X is Y / remember that …           叫我 / 我的X是Y / 记住 …
//
// Questions, hypotheticals ("if I prefer…"), quoted and fenced text are
// skipped; the assistant's text only feeds the working summary.
type Heuristic struct{}

// Name implements Extractor.
func (Heuristic) Name() string { return "heuristic" }

// Extract implements Extractor.
func (Heuristic) Extract(_ context.Context, turns []Turn) ([]Candidate, error) {
	var out []Candidate
	for i, t := range turns {
		for _, c := range extractMessage(t.User, feedbackCue.MatchString(t.User)) {
			c.Turn = i
			if c.Subject == "" && c.Correction && i > 0 && turns[i-1].Assistant != "" && pronounOnly(c.Content) {
				// "That's wrong, it should be 9090": say what "it" was.
				c.Content += " (correcting: “" + oneLine(turns[i-1].Assistant, 100) + "”)"
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// Summarize implements Extractor: the session's first and last requests.
func (Heuristic) Summarize(_ context.Context, turns []Turn) (Candidate, bool, error) {
	var users []Turn
	for _, t := range turns {
		if strings.TrimSpace(t.User) != "" {
			users = append(users, t)
		}
	}
	if len(users) < 2 {
		return Candidate{}, false, nil
	}
	first, last := users[0], users[len(users)-1]
	var b strings.Builder
	b.WriteString("Session of ")
	b.WriteString(itoa(len(users)))
	b.WriteString(" exchanges. Began with: “")
	b.WriteString(oneLine(stripCode(first.User), 140))
	b.WriteString("”. Ended with: “")
	b.WriteString(oneLine(stripCode(last.User), 140))
	b.WriteString("”")
	if a := firstSentence(stripCode(last.Assistant)); a != "" {
		b.WriteString(" → “")
		b.WriteString(oneLine(a, 120))
		b.WriteString("”")
	}
	b.WriteString(".")
	return Candidate{
		Type: WorkingSummary, Content: b.String(), Importance: 0.5, Confidence: 0.6, TTL: 30 * 24 * time.Hour,
		Entities: entitiesOf(first.User + "\n" + last.User), Turn: len(turns) - 1,
	}, true, nil
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// maxSentence is the longest sentence mined; longer ones are pasted text.
const maxSentence = 400

// ExtractText mines one user message.
func ExtractText(text string) []Candidate {
	return extractMessage(text, feedbackCue.MatchString(text))
}

// maxCandidates bounds what one message yields.
const maxCandidates = 8

// extractMessage mines one user message; feedback says it corrects an
// answer (rules inside it are read more liberally).
func extractMessage(text string, feedback bool) []Candidate {
	sts := statements(text)
	imperatives := len(sts) // statements from here on may be instructions
	if feedback {
		imperatives = 0
	}
	out, firstRule := extractStatements(sts, feedback, imperatives)
	if !feedback && firstRule >= 0 && firstRule+1 < len(sts) {
		// A message that states a rule teaches: the instructions that
		// follow it ("Never hard-code the ticket number. Use the
		// {{ticket.id}} placeholder.") are rules too.
		out, _ = extractStatements(sts, false, firstRule+1)
	}
	return out
}

// extractStatements mines a message's statements; from the statement at
// index imperatives on, instructions count as rules. It returns the index
// of the first statement read as a rule (-1: none).
func extractStatements(sts []statement, feedback bool, imperatives int) ([]Candidate, int) {
	var out []Candidate
	firstRule := -1
	seen := map[string]bool{}
	for i, st := range sts {
		body := st.text
		converted := false
		if conv, ok := defectRule(body, st.defect || feedback); ok {
			body, converted = conv, true
		}
		c, ok := extractSentence(body)
		if !ok && (feedback || st.defect || converted) {
			c, ok = ruleGeneral(body)
		}
		if !ok && (i >= imperatives || st.defect) {
			c, ok = ruleImperative(body)
		}
		if !ok && len(sts) == 1 && !feedback {
			c, ok = ruleStanding(body) // an instruction sent alone (standing.go)
		}
		if !ok && st.block != "" {
			c, ok = ruleAttached(body)
		}
		if !ok {
			continue
		}
		if converted {
			c.Tags = appendTag(c.Tags, "feedback")
		}
		c.Content = finishSentence(c.Content)
		if len(Terms(c.Content)) == 0 || utf8.RuneCountInString(c.Content) < 4 || fragment(c.Content) || unresolved(body) {
			continue
		}
		c = asInstance(c, body)
		if st.block != "" && c.Type != Episodic {
			c.Content = attachBlock(c.Content, st.block)
			c.Entities = mergeStrings(entitiesOf(body), blockKeys(st.block), 8)
		}
		key := string(c.Type) + "\x00" + normKey(c.Content)
		if seen[key] {
			continue
		}
		seen[key] = true
		if c.Entities == nil {
			c.Entities = entitiesOf(body)
		}
		if firstRule < 0 && hasTag(c.Tags, "rule") && c.Type != Semantic {
			firstRule = i
		}
		out = append(out, c)
		if len(out) == maxCandidates {
			break
		}
	}
	return out, firstRule
}

var fence = mustGuard("(?s)```.*?(```|$)")

// stripCode removes fenced code blocks (pasted code and logs are not statements).
func stripCode(s string) string {
	if strings.Contains(s, "```") {
		s = fence.ReplaceAllString(s, "\n")
	}
	return s
}

var abbreviations = setOf(`e.g i.e etc vs mr mrs ms dr st no approx`)

// sentences splits text into sentences, skipping quotes, tables and code.
func sentences(text string) []string {
	text = stripCode(text)
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, ">") || strings.HasPrefix(line, "|") || strings.HasPrefix(line, "$ ") {
			continue
		}
		line = strings.TrimLeft(line, "-*•·+ \t")
		line = listNumber.ReplaceAllString(line, "")
		start := 0
		rs := []rune(line)
		for i := 0; i < len(rs); i++ {
			r := rs[i]
			end := false
			switch r {
			case '。', '！', '？', '；', '!', '?', ';':
				end = true
			case '.':
				next := ' '
				if i+1 < len(rs) {
					next = rs[i+1]
				}
				if unicode.IsSpace(next) || isCJK(next) || i+1 == len(rs) {
					word := strings.ToLower(lastWord(string(rs[start:i])))
					end = !abbreviations[word]
				}
			}
			if end {
				if s := strings.TrimSpace(string(rs[start : i+1])); s != "" {
					out = append(out, s)
				}
				start = i + 1
			}
			if len(out) >= 80 {
				return out
			}
		}
		if s := strings.TrimSpace(string(rs[start:])); s != "" {
			out = append(out, s)
		}
		if len(out) >= 80 {
			return out
		}
	}
	return out
}

var listNumber = mustGuard(`^\d{1,2}[.)]\s+`)

func lastWord(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexFunc(s, unicode.IsSpace); i >= 0 {
		return s[i+1:]
	}
	return s
}

func firstSentence(s string) string {
	ss := sentences(s)
	if len(ss) == 0 {
		return ""
	}
	return ss[0]
}

var (
	enCorrection = mustGuard(`(?i)^(?:no|nope|wrong|incorrect|not quite|not really|actually|correction|update|that'?s (?:wrong|incorrect|not right|not correct|not true)|that is (?:wrong|incorrect|not right|not correct|not true)|you'?re wrong|you are wrong|i(?:'ve| have)? changed my mind|change of plans?|scratch that|on second thought)\b[\s,.:;!—–-]*`)
	enFiller     = mustGuard(`(?i)^(?:ok|okay|so|well|also|and|but|btw|by the way|oh|hey|hi|hello|great|thanks|thank you|sorry|wait|hmm|fyi:?|one more thing|just a note|quick note)\b[\s,.:;!—–-]*`)
	zhCorrection = mustGuard(`^(?:不对|不是的|不是这样|错了|你错了|说错了|其实|更正一下|更正|纠正一下|纠正|我改主意了|改一下)[，,。.：:！!\s]*`)
	zhFiller     = mustGuard(`^(?:好的|好|嗯|对了|另外|还有|顺便说一下|顺便|那个|哦|谢谢)[，,。.：:！!\s]*`)
	changeWords  = mustGuard(`(?i)\b(?:from now on|going forward|from here on|instead|anymore|any more|no longer|these days|nowadays|switched to|moved to|migrated to|changed to|changing to|now prefer|now use|now using|now on)\b|\bnow[.!]?$`)
	zhChange     = mustGuard(`以后|今后|从现在开始|从今以后|现在改|改用|改成|换成|换用|不再|现在用|现在更|迁移到|切换到`)
	hypothetical = mustGuard(`(?i)^(?:if|unless|suppose|supposing|imagine|assuming|what if|in case)\b|^(?:如果|假如|要是|假设|万一)`)
)

// extractSentence applies the rules to one sentence.
func extractSentence(s string) (Candidate, bool) {
	if len(s) > maxSentence || len(s) < 4 {
		return Candidate{}, false
	}
	trimmed := strings.TrimRight(s, " \t")
	if strings.HasSuffix(trimmed, "?") || strings.HasSuffix(trimmed, "？") || strings.HasSuffix(strings.TrimRight(trimmed, "。.！!"), "吗") {
		return Candidate{}, false
	}
	body := strings.TrimRight(trimmed, ".。!！;；")
	corr := false
	for range 4 {
		before := body
		if m := enCorrection.FindString(body); m != "" {
			body, corr = body[len(m):], true
		}
		if m := zhCorrection.FindString(body); m != "" {
			body, corr = body[len(m):], true
		}
		if m := enFiller.FindString(body); m != "" {
			body = body[len(m):]
		}
		if m := zhFiller.FindString(body); m != "" {
			body = body[len(m):]
		}
		if body == before {
			break
		}
	}
	body = strings.TrimSpace(body)
	if body == "" || hypothetical.MatchString(body) {
		return Candidate{}, false
	}
	if changeWords.MatchString(body) || zhChange.MatchString(body) {
		corr = true
	}
	for _, rule := range rules {
		if c, ok := rule(body); ok {
			return corrected(c, corr), true
		}
	}
	if corr {
		// "That's wrong, it should be 9090": the subject is in the answer corrected.
		if m := enShouldBe.FindStringSubmatch(body); m != nil && len(Terms(m[2]))+btoi(hasDigit(m[2])) > 0 {
			c := Candidate{Type: Semantic, Content: capitalize(rewrite(body)), Importance: 0.75, Confidence: 0.7, Tags: []string{"rule"}}
			return corrected(c, true), true
		}
		// "No, the staging port is 9090": a plain "X is Y" counts only as a correction.
		if m := enIsFact.FindStringSubmatch(body); m != nil && len(Terms(m[2]))+btoi(hasDigit(m[2])) > 0 {
			c := Candidate{Type: Semantic, Content: capitalize(rewrite(body)), Importance: 0.75, Confidence: 0.7}
			factSlot(&c, m[1], m[2])
			return corrected(c, true), true
		}
		// "No, the build server runs on node nine": a declarative correction.
		if declarative.MatchString(body) && len(Terms(body)) >= 3 {
			c := Candidate{Type: Semantic, Content: capitalize(rewrite(body)), Importance: 0.75, Confidence: 0.65}
			return corrected(c, true), true
		}
		if m := zhIsFact.FindStringSubmatch(body); m != nil && len(Terms(m[2]))+btoi(hasDigit(m[2])) > 0 {
			c := Candidate{Type: Semantic, Content: "纠正：" + body, Importance: 0.75, Confidence: 0.7}
			if !hasAny(m[1], "它", "这", "那") {
				c.Subject, c.Value = "fact:"+normKey(m[1]), normKey(m[2])
			}
			return corrected(c, true), true
		}
	}
	return Candidate{}, false
}

var declarative = mustGuard(`(?i)^(?:the|our|my)\s+[\p{L}\p{N}]`)

var zhIsFact = mustGuard(`^(.{1,20}?)(?:是|为|改为|改成)(.+)`)

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

var trailingChange = mustGuard(`(?i)[,\s]+(?:now|instead|from now on|going forward|these days|nowadays|anymore)[.!]*$`)

func corrected(c Candidate, corr bool) Candidate {
	if !corr {
		return c
	}
	if t := trailingChange.ReplaceAllString(c.Content, ""); len(Terms(t)) > 0 {
		c.Content = t
	}
	c.Correction = true
	c.Importance = min(1, c.Importance+0.05)
	c.Tags = appendTag(c.Tags, "correction")
	if c.Type == Semantic && (strings.HasPrefix(c.Content, "应该") || strings.HasPrefix(c.Content, "应当")) {
		c.Content = "纠正：" + c.Content
	}
	return c
}

func appendTag(tags []string, t string) []string {
	for _, x := range tags {
		if x == t {
			return tags
		}
	}
	return append(tags, t)
}

type rule func(body string) (Candidate, bool)

var rules = []rule{ruleName, ruleMy, rulePrefer, ruleZhPrefer, ruleAlways, ruleZhRule, ruleProject, ruleZhProject,
	ruleRemember, ruleShouldBe, ruleZhShould, ruleMust, ruleEpisode}
