package memory

import (
	"context"
	"regexp"
	"sort"
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
		for _, c := range ExtractText(t.User) {
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
	var out []Candidate
	seen := map[string]bool{}
	for _, s := range sentences(text) {
		c, ok := extractSentence(s)
		if !ok {
			continue
		}
		c.Content = finishSentence(c.Content)
		if len(Terms(c.Content)) == 0 || utf8.RuneCountInString(c.Content) < 4 {
			continue
		}
		key := string(c.Type) + "\x00" + normKey(c.Content)
		if seen[key] {
			continue
		}
		seen[key] = true
		if c.Entities == nil {
			c.Entities = entitiesOf(s)
		}
		out = append(out, c)
		if len(out) == 8 {
			break
		}
	}
	return out
}

var fence = regexp.MustCompile("(?s)```.*?(```|$)")

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

var listNumber = regexp.MustCompile(`^\d{1,2}[.)]\s+`)

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
	enCorrection = regexp.MustCompile(`(?i)^(?:no|nope|wrong|incorrect|not quite|not really|actually|correction|update|that'?s (?:wrong|incorrect|not right|not correct|not true)|that is (?:wrong|incorrect|not right|not correct|not true)|you'?re wrong|you are wrong|i(?:'ve| have)? changed my mind|change of plans?|scratch that|on second thought)\b[\s,.:;!—–-]*`)
	enFiller     = regexp.MustCompile(`(?i)^(?:ok|okay|so|well|also|and|but|btw|by the way|oh|hey|hi|hello|great|thanks|thank you|sorry|wait|hmm|fyi:?|one more thing|just a note|quick note)\b[\s,.:;!—–-]*`)
	zhCorrection = regexp.MustCompile(`^(?:不对|不是的|不是这样|错了|你错了|说错了|其实|更正一下|更正|纠正一下|纠正|我改主意了|改一下)[，,。.：:！!\s]*`)
	zhFiller     = regexp.MustCompile(`^(?:好的|好|嗯|对了|另外|还有|顺便说一下|顺便|那个|哦|谢谢)[，,。.：:！!\s]*`)
	changeWords  = regexp.MustCompile(`(?i)\b(?:from now on|going forward|from here on|instead|anymore|any more|no longer|these days|nowadays|switched to|moved to|migrated to|changed to|changing to|now prefer|now use|now using|now on)\b|\bnow[.!]?$`)
	zhChange     = regexp.MustCompile(`以后|今后|从现在开始|从今以后|现在改|改用|改成|换成|换用|不再|现在用|现在更|迁移到|切换到`)
	hypothetical = regexp.MustCompile(`(?i)^(?:if|unless|suppose|supposing|imagine|assuming|what if|in case)\b|^(?:如果|假如|要是|假设|万一)`)
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

var declarative = regexp.MustCompile(`(?i)^(?:the|our|my)\s+[\p{L}\p{N}]`)

var zhIsFact = regexp.MustCompile(`^(.{1,20}?)(?:是|为|改为|改成)(.+)`)

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

var trailingChange = regexp.MustCompile(`(?i)[,\s]+(?:now|instead|from now on|going forward|these days|nowadays|anymore)[.!]*$`)

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

// ---- names ----

var (
	enCallMe = regexp.MustCompile(`(?i)\b(?:please\s+)?(?:call me|you can call me|refer to me as|address me as)\s+(.+)`)
	enMyName = regexp.MustCompile(`(?i)\b(?:my name is|my name's|i am called|i'm called|i go by)\s+(.+)`)
	zhCallMe = regexp.MustCompile(`(?:请)?(?:叫我|称呼我为?|称我为?|喊我)\s*([^，,。.！!\s]{1,16})`)
	zhMyName = regexp.MustCompile(`^我(?:的名字|的姓名)?(?:叫|是叫|名叫)\s*([^，,。.！!\s]{1,16})|^我的名字是\s*([^，,。.！!\s]{1,16})`)
)

func ruleName(s string) (Candidate, bool) {
	if m := enCallMe.FindStringSubmatch(s); m != nil {
		if name := personName(m[1]); name != "" {
			return Candidate{Type: Preference, Content: "Call the user " + name, Subject: "fact:name", Value: normKey(name),
				Importance: 0.9, Confidence: 0.9, Tags: []string{"name"}, Entities: []string{name}}, true
		}
	}
	if m := enMyName.FindStringSubmatch(s); m != nil {
		if name := personName(m[1]); name != "" {
			return Candidate{Type: Semantic, Content: "The user's name is " + name, Subject: "fact:name", Value: normKey(name),
				Importance: 0.9, Confidence: 0.9, Tags: []string{"name"}, Entities: []string{name}}, true
		}
	}
	if m := zhCallMe.FindStringSubmatch(s); m != nil {
		name := strings.TrimRight(m[1], "吧呀啊哦")
		if name != "" && !strings.ContainsAny(name, "什么怎么") {
			return Candidate{Type: Preference, Content: "称呼用户为" + name, Subject: "fact:name", Value: normKey(name),
				Importance: 0.9, Confidence: 0.9, Tags: []string{"name"}, Entities: []string{name}}, true
		}
	}
	if m := zhMyName.FindStringSubmatch(s); m != nil {
		name := m[1]
		if name == "" {
			name = m[2]
		}
		if name != "" {
			return Candidate{Type: Semantic, Content: "用户的名字是" + name, Subject: "fact:name", Value: normKey(name),
				Importance: 0.9, Confidence: 0.9, Tags: []string{"name"}, Entities: []string{name}}, true
		}
	}
	return Candidate{}, false
}

var nameStop = regexp.MustCompile(`(?i)\s+(?:from now on|please|instead|going forward|in the future|and|but|because|since|when|if|from|—|-).*$|[,;:(].*$`)

// personName takes up to four words of a name.
func personName(s string) string {
	s = nameStop.ReplaceAllString(strings.TrimSpace(s), "")
	s = strings.Trim(s, " \"'“”‘’.!")
	ws := strings.Fields(s)
	if len(ws) == 0 || len(ws) > 4 {
		return ""
	}
	for _, w := range ws {
		if stopEN[strings.ToLower(w)] && len(ws) == 1 {
			return ""
		}
	}
	return strings.Join(ws, " ")
}

// ---- my X is Y ----

var (
	enMy        = regexp.MustCompile(`(?i)^(?:and\s+)?(my|our)\s+((?:[\p{L}\p{N}'’_\-]+\s+){0,3}?[\p{L}\p{N}'’_\-]+)\s+(?:is now|are now|is|are|=)\s+(.+)`)
	zhMy        = regexp.MustCompile(`^(我的|我们的)([^，,。是]{1,12}?)(?:是|为|叫|用的是)(.+)`)
	notPersonal = setOf(`question questions point problem problems issue issues guess bad fault concern concerns answer idea plan understanding
worry take thought thoughts opinion pleasure apologies apology mistake goal request task job code output error suggestion
main first second last next only point main`)
)

func ruleMy(s string) (Candidate, bool) {
	if m := enMy.FindStringSubmatch(s); m != nil {
		owner, attr, val := strings.ToLower(m[1]), strings.TrimSpace(m[2]), strings.TrimSpace(m[3])
		attrKey := normKey(attr)
		lastAttr := strings.ToLower(lastWord(attr))
		if attrKey == "" || notPersonal[lastAttr] || len(Terms(val)) == 0 && !hasDigit(val) {
			return Candidate{}, false
		}
		c := Candidate{Type: Semantic, Importance: 0.8, Confidence: 0.8, Value: normKey(val)}
		pref := false
		for _, p := range []string{"favorite ", "favourite ", "preferred "} {
			if strings.HasPrefix(strings.ToLower(attr), p) {
				pref = true
				attrKey = normKey(attr[len(p):])
			}
		}
		who := "The user's "
		if owner == "our" {
			who = "The team's "
			c.Type = ProjectState
			c.Subject = "proj:" + attrKey
		} else {
			c.Subject = "fact:my " + attrKey
		}
		if pref {
			c.Type = Preference
			c.Subject = "pref:" + attrKey
			if cat, _ := categorize(val, attr); cat != "" {
				c.Subject = "pref:" + cat
			}
		}
		c.Content = who + attr + " " + verbBe(attr) + " " + rewrite(val)
		return c, true
	}
	if m := zhMy.FindStringSubmatch(s); m != nil {
		owner, attr, val := m[1], strings.TrimSpace(m[2]), strings.TrimSpace(m[3])
		if attr == "" || val == "" || strings.ContainsAny(attr, "问题意思想法") {
			return Candidate{}, false
		}
		c := Candidate{Type: Semantic, Importance: 0.8, Confidence: 0.8, Value: normKey(val), Subject: "fact:my " + normKey(attr)}
		who := "用户的"
		if owner != "我的" {
			who = "团队的"
			c.Type = ProjectState
			c.Subject = "proj:" + normKey(attr)
		}
		c.Content = who + attr + "是" + val
		return c, true
	}
	return Candidate{}, false
}

func verbBe(attr string) string {
	w := strings.ToLower(lastWord(attr))
	if strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is") {
		return "are"
	}
	return "is"
}

func hasDigit(s string) bool { return strings.IndexFunc(s, unicode.IsDigit) >= 0 }

// ---- preferences ----

var enPrefer = regexp.MustCompile(`(?i)^(?:.{0,40}?[,;]\s*)?(?:and\s+)?i(?:'d|\s+would|'m|\s+am)?(?:\s+(?:really|strongly|generally|usually|still|now|also|much|definitely|absolutely|personally|mostly|always|do|actually))*\s+` +
	`(prefer|rather|like to|like my|like it when|like using|like the|love|enjoy|hate|dislike|don't like|do not like|don't really like|can't stand|cannot stand|don't want|do not want|want you to|like you to|need you to|don't need|do not need|used to|favor|favour|avoid)\b\s*(.*)`)

func rulePrefer(s string) (Candidate, bool) {
	m := enPrefer.FindStringSubmatch(s)
	if m == nil {
		return Candidate{}, false
	}
	verb, rest := strings.ToLower(m[1]), strings.TrimSpace(m[2])
	if len(Terms(rest)) == 0 {
		return Candidate{}, false
	}
	neg := false
	var content string
	switch verb {
	case "prefer", "favor", "favour":
		content = "The user prefers " + rewrite(rest)
	case "rather":
		content = "The user would rather " + rewrite(rest)
	case "like to", "like my", "like it when", "like using", "like the", "love", "enjoy":
		content = "The user " + rewriteSubject("I "+verb, "the user") + " " + rewrite(rest)
	case "hate", "dislike", "don't like", "do not like", "don't really like", "can't stand", "cannot stand", "avoid":
		neg = true
		content = "The user dislikes " + rewrite(rest)
		if verb == "avoid" {
			content = "The user avoids " + rewrite(rest)
		}
	case "don't want", "do not want":
		neg = true
		content = "The user does not want " + rewrite(rest)
	case "don't need", "do not need":
		neg = true
		content = "The user does not need " + rewrite(rest)
	case "want you to", "like you to", "need you to":
		content = "The user wants the assistant to " + rewrite(rest)
	case "used to":
		content = "The user is used to " + rewrite(rest)
	}
	c := Candidate{Type: Preference, Content: content, Importance: 0.85, Confidence: 0.8}
	prefSlot(&c, rest, s, neg, false)
	return c, true
}

var (
	zhPrefer   = regexp.MustCompile(`^((?:[^，,。]{0,12}[，,])?)我(?:个人)?(?:更|比较|最|很|还是|一直|通常|也|现在|其实|真的|特别|非常)*(喜欢|偏好|偏爱|倾向于|倾向|习惯于|习惯|爱用|想要|希望|要求)(.+)`)
	zhDislike  = regexp.MustCompile(`^((?:[^，,。]{0,12}[，,])?)我(?:个人)?(?:很|真的|特别|非常|一直|也|现在)*(不喜欢|讨厌|不想要|不希望|不想|受不了|不习惯|反感)(.+)`)
	zhConnects = []string{"而不是", "而非", "不要", "不用", "，不", ",不", "胜过", "多过"}
)

func ruleZhPrefer(s string) (Candidate, bool) {
	if m := zhDislike.FindStringSubmatch(s); m != nil && len(Terms(m[3])) > 0 {
		c := Candidate{Type: Preference, Content: m[1] + "用户" + s[len(m[1])+len("我"):], Importance: 0.85, Confidence: 0.8}
		prefSlot(&c, m[3], s, true, false)
		return c, true
	}
	if m := zhPrefer.FindStringSubmatch(s); m != nil && len(Terms(m[3])) > 0 {
		c := Candidate{Type: Preference, Content: m[1] + "用户" + s[len(m[1])+len("我"):], Importance: 0.85, Confidence: 0.8}
		prefSlot(&c, m[3], s, false, false)
		return c, true
	}
	return Candidate{}, false
}

// prefSlot fills the subject and value of a preference or rule: the
// category of its object ("spaces" → pref:indentation) or, failing that,
// the qualifier ("… in the morning" → pref:morning); rules without either
// key on their action, so "always X" and "never X" collide.
func prefSlot(c *Candidate, rest, sentence string, neg, isRule bool) {
	object, qualifier := splitObject(rest)
	pol := "+"
	if neg {
		pol = "-"
	}
	cat, vals := categorize(object, sentence)
	if len(vals) == 0 && qualifier != "" {
		if cat2, vals2 := categorize(rest, sentence); len(vals2) > 0 {
			cat, vals = cat2, vals2
		}
	}
	if isRule && len(vals) == 0 {
		cat = "" // a rule is keyed on its action unless it names a value
	}
	if cat != "" {
		c.Subject = "pref:" + cat
		sort.Strings(vals)
		if len(vals) == 0 {
			c.Value = pol + normKey(object)
		} else {
			c.Value = pol + strings.Join(vals, " ")
		}
		c.Entities = mergeStrings(c.Entities, vals, 8)
		return
	}
	if q := normKey(qualifier); q != "" && len(strings.Fields(q)) <= 4 && !isRule {
		c.Subject = "pref:" + q
		c.Value = pol + normKey(object)
		return
	}
	if isRule {
		if k := normKey(rest); k != "" {
			c.Subject = "rule:" + k
			c.Value = pol
		}
		return
	}
	c.Value = pol + normKey(object)
}

var (
	enConnect   = regexp.MustCompile(`(?i)\s+(?:over|rather than|instead of|than|and not|not|vs\.?|versus)\s+|,\s*(?:not|never)\s+|\s+to\s+(?:using\s+)?`)
	enQualifier = regexp.MustCompile(`(?i)\s+(?:for|when|in|on|while|during|with)\s+(.+)$`)
)

// splitObject separates "tabs over spaces for Go code" into the preferred
// object ("tabs") and its qualifier ("Go code").
func splitObject(rest string) (object, qualifier string) {
	object = rest
	for _, c := range zhConnects {
		if i := strings.Index(object, c); i > 0 {
			object = object[:i]
		}
	}
	if loc := enConnect.FindStringIndex(object); loc != nil && loc[0] > 0 {
		object = object[:loc[0]]
	}
	if m := enQualifier.FindStringSubmatchIndex(object); m != nil && m[0] > 0 {
		qualifier = object[m[2]:m[3]]
		object = object[:m[0]]
	}
	return strings.TrimSpace(object), strings.TrimSpace(qualifier)
}

// ---- rules ----

var (
	enRule = regexp.MustCompile(`(?i)^(?:please\s+)?(?:(?:from now on|going forward|from here on|in (?:the )?future|henceforth)[,\s]+)?(?:please\s+)?(?:(you|i|we)\s+(?:should\s+|must\s+|will\s+)?)?` +
		`(always|never|don't ever|do not ever|don't|do not|make sure(?: to| that| you)?|remember to|don't forget to|do not forget to|be sure to|stop|keep)\s+(.+)`)
	enFromNow = regexp.MustCompile(`(?i)^(?:from now on|going forward|from here on|in (?:the )?future|henceforth)[,\s]+(?:please\s+)?(.+)`)
	notRules  = setOf(`worry bother mind be know care think apologize apologise hesitate panic thank`)
)

func ruleAlways(s string) (Candidate, bool) {
	m := enRule.FindStringSubmatch(s)
	if m == nil {
		if f := enFromNow.FindStringSubmatch(s); f != nil {
			// "From now on, reply in English."
			rest := f[1]
			if len(Terms(rest)) < 2 {
				return Candidate{}, false
			}
			c := Candidate{Type: Preference, Content: capitalize(rewrite(rest)), Importance: 0.85, Confidence: 0.8, Tags: []string{"rule"}, Correction: true}
			prefSlot(&c, rest, s, false, true)
			return c, true
		}
		return Candidate{}, false
	}
	who, verb, rest := strings.ToLower(m[1]), strings.ToLower(m[2]), strings.TrimSpace(m[3])
	first := strings.ToLower(strings.Fields(rest + " x")[0])
	if notRules[first] || len(Terms(rest)) == 0 {
		return Candidate{}, false
	}
	if (verb == "don't" || verb == "do not" || verb == "stop" || verb == "keep") && who == "" && len(strings.Fields(rest)) < 2 {
		return Candidate{}, false
	}
	if (verb == "stop" || verb == "keep") && who != "" {
		return Candidate{}, false
	}
	neg := verb == "never" || verb == "don't ever" || verb == "do not ever" || verb == "don't" || verb == "do not" || verb == "stop"
	var lead string
	switch verb {
	case "always":
		lead = "Always "
	case "never", "don't ever", "do not ever":
		lead = "Never "
	case "don't", "do not":
		lead = "Do not "
	case "stop":
		lead = "Stop "
	case "keep":
		lead = "Keep "
	default:
		lead = "Make sure to "
	}
	typ := Preference
	switch who {
	case "i":
		lead = "The user " + strings.ToLower(strings.TrimSpace(lead)) + " "
		if verb == "always" || verb == "never" {
			rest = rewriteVerbAfter(rest)
		}
	case "we":
		typ = ProjectState
		lead = "The team " + strings.ToLower(strings.TrimSpace(lead)) + " "
		if verb == "always" || verb == "never" {
			rest = rewriteVerbAfter(rest)
		}
	case "you":
		lead = "The assistant should " + strings.ToLower(lead)
		if verb == "don't" || verb == "do not" {
			lead = "The assistant should not "
		}
	}
	c := Candidate{Type: typ, Content: lead + rewrite(rest), Importance: 0.85, Confidence: 0.8, Tags: []string{"rule"}}
	if typ == ProjectState {
		c.Importance = 0.8
	}
	prefSlot(&c, rest, s, neg, true)
	return c, true
}

var (
	zhRulePos = regexp.MustCompile(`^(?:请你|请|你)?(?:以后|今后|从现在开始|从今以后|以后请|记得)?[，,]?(?:请|你)?(总是|一直|始终|每次都|永远都|永远|务必|一定要|必须|记得)(.+)`)
	zhFromNow = regexp.MustCompile(`^(?:请你|请|你)?(?:以后|今后|从现在开始|从今以后|往后)[，,]?(?:请|你)?(?:都|就)?(.+)`)
	zhRuleNeg = regexp.MustCompile(`^(?:请你|请|你)?(?:以后|今后|从现在开始|从今以后|以后请)?[，,]?(?:请|你)?(永远不要|永远别|绝对不要|千万不要|千万别|不要再|不要|别再|别|不许|禁止|不准|不能|不可以)(.+)`)
)

func ruleZhRule(s string) (Candidate, bool) {
	if m := zhRuleNeg.FindStringSubmatch(s); m != nil && len(Terms(m[2])) > 0 {
		c := Candidate{Type: Preference, Content: zhRuleContent(s), Importance: 0.85, Confidence: 0.8, Tags: []string{"rule"}}
		prefSlot(&c, m[2], s, true, true)
		return c, true
	}
	if m := zhRulePos.FindStringSubmatch(s); m != nil && len(Terms(m[2])) > 0 {
		c := Candidate{Type: Preference, Content: zhRuleContent(s), Importance: 0.85, Confidence: 0.8, Tags: []string{"rule"}}
		prefSlot(&c, m[2], s, false, true)
		return c, true
	}
	if m := zhFromNow.FindStringSubmatch(s); m != nil && len(Terms(m[1])) > 0 {
		c := Candidate{Type: Preference, Content: zhRuleContent(s), Importance: 0.85, Confidence: 0.8, Tags: []string{"rule"}, Correction: true}
		prefSlot(&c, m[1], s, false, true)
		return c, true
	}
	return Candidate{}, false
}

func zhRuleContent(s string) string {
	s = strings.TrimPrefix(s, "请你")
	s = strings.TrimPrefix(s, "请")
	s = strings.TrimPrefix(s, "你")
	return "规则：" + s
}

// ---- project ----

var (
	enProject = regexp.MustCompile(`(?i)^(?:.{0,30}?[,;]\s*)?(?:` +
		`we(?:'re| are)?(?:\s+(?:now|currently|mostly|mainly|also|still|actually))*\s+(use|using|run|running|deploy|deploying|host|hosting|rely on|relying on|build with|building with|write|writing|code in|develop in|standardi[sz]ed on|migrated to|switched to|moved to|changed to|are moving to|are migrating to|are switching to|'re moving to|'re migrating to|'re switching to|target|targeting|support|ship)` +
		`|we(?:'ve| have)\s+(switched to|moved to|migrated to|changed to|standardi[sz]ed on|adopted|chosen|picked|decided on|decided to use)` +
		`|(?:our|the)\s+(?:stack|project|team|codebase|code base|repo|repository|app|application|service|backend|frontend|ci|infra|infrastructure|api|website|site|product|company|org|organization|database|db|deployment|server|servers|cluster)\s+(uses|is using|runs on|runs|relies on|is built on|is built with|is written in|is deployed (?:on|to)|lives (?:on|in)|has moved to|moved to|switched to|migrated to|is hosted on|targets|depends on)` +
		`)\s+(.+)`)
)

var enSwitched = regexp.MustCompile(`(?i)^(?:.{0,30}?[,;]\s*)?we(?:'ve| have)?(?:\s+(?:just|now|finally|recently|already))*\s+(switched|moved|migrated|changed|ported|upgraded)\s+((?:the|our)\s+)?((?:[\p{L}\p{N}_\-]+\s+){0,3}?[\p{L}\p{N}_\-]+)\s+(?:over\s+)?(?:to|onto)\s+(.+)`)

func ruleProject(s string) (Candidate, bool) {
	m := enProject.FindStringSubmatch(s)
	if m == nil {
		// "We switched the main database to MySQL."
		if w := enSwitched.FindStringSubmatch(s); w != nil && len(Terms(w[4])) > 0 {
			c := Candidate{Type: ProjectState, Content: capitalize(rewrite(s)), Importance: 0.8, Confidence: 0.75, Correction: true}
			object, _ := splitObject(w[4])
			if cat, vals := categorize(object, w[3]+" "+object); cat != "" && len(vals) > 0 {
				sort.Strings(vals)
				c.Subject, c.Value = "proj:"+cat, strings.Join(vals, " ")
			} else if k := normKey(w[3]); k != "" {
				c.Subject, c.Value = "proj:"+k, normKey(object)
			}
			return c, true
		}
		return Candidate{}, false
	}
	verb := strings.ToLower(m[1] + m[2] + m[3])
	rest := strings.TrimSpace(m[4])
	if len(Terms(rest)) == 0 {
		return Candidate{}, false
	}
	c := Candidate{Type: ProjectState, Content: capitalize(rewrite(s)), Importance: 0.8, Confidence: 0.75}
	if hasAny(verb, "switch", "moved", "migrat", "changed", "moving") {
		c.Correction = true
	}
	object, qualifier := splitObject(rest)
	if cat, vals := categorize(object, s); cat != "" {
		sort.Strings(vals)
		c.Subject = "proj:" + cat
		c.Value = strings.Join(vals, " ")
		if c.Value == "" {
			c.Value = normKey(object)
		}
		c.Entities = mergeStrings(nil, vals, 8)
	} else if q := normKey(qualifier); q != "" && len(strings.Fields(q)) <= 4 {
		c.Subject = "proj:" + q
		c.Value = normKey(object)
	}
	return c, true
}

var (
	zhProject = regexp.MustCompile(`^(?:[^，,。]{0,12}[，,])?(?:我们团队|我们公司|我们的项目|我们项目|这个项目|我们|团队|公司|项目|代码库|仓库)(?:的([^，,。]{1,8}?))?(?:现在|目前|一直|都|也|主要|已经)*(用|使用|在用|采用|用的是|基于|跑在|部署在|改用|换成|换用|迁移到|切换到|改成)(.+)`)
)

func ruleZhProject(s string) (Candidate, bool) {
	m := zhProject.FindStringSubmatch(s)
	if m == nil || len(Terms(m[3])) == 0 {
		return Candidate{}, false
	}
	noun, verb, rest := m[1], m[2], m[3]
	content := s
	for _, p := range []string{"我们团队", "我们公司", "我们的项目", "我们项目", "我们"} {
		if strings.Contains(content, p) {
			content = strings.Replace(content, p, "团队", 1)
			break
		}
	}
	c := Candidate{Type: ProjectState, Content: content, Importance: 0.8, Confidence: 0.75}
	if hasAny(verb, "改", "换", "迁移", "切换") {
		c.Correction = true
	}
	object, _ := splitObject(rest)
	if cat, vals := categorize(object, s); cat != "" {
		sort.Strings(vals)
		c.Subject = "proj:" + cat
		c.Value = strings.Join(vals, " ")
		if c.Value == "" {
			c.Value = normKey(object)
		}
	} else if k := normKey(noun); k != "" {
		c.Subject, c.Value = "proj:"+k, normKey(object)
	}
	return c, true
}

// ---- remember / facts ----

var (
	enRemember = regexp.MustCompile(`(?i)^(?:please\s+)?(?:remember|keep in mind|note|noted|fyi|for your information|just so you know|for context|for (?:future|your) reference|don't forget|do not forget|bear in mind|important|heads up|be aware)\b(?:\s+that)?[:,\s]+(.+)`)
	zhRemember = regexp.MustCompile(`^(?:请)?(?:记住|记一下|记下|记得|注意|备注|提醒一下|要知道|你要知道)[，,:：\s]*(.+)`)
	enIsFact   = regexp.MustCompile(`(?i)^(?:the|our|my|this|that)?\s*((?:[\p{L}\p{N}'’_\-]+\s+){0,4}?[\p{L}\p{N}'’_\-]+)\s+(?:is|are|was|=|should be|must be|has to be|needs to be|will be)\s+(.+)`)
)

func ruleRemember(s string) (Candidate, bool) {
	var rest string
	if m := enRemember.FindStringSubmatch(s); m != nil {
		rest = strings.TrimSpace(m[1])
	} else if m := zhRemember.FindStringSubmatch(s); m != nil {
		rest = strings.TrimSpace(m[1])
	} else {
		return Candidate{}, false
	}
	if len(Terms(rest)) == 0 {
		return Candidate{}, false
	}
	// The rest may itself be a preference, rule or personal fact.
	for _, r := range []rule{ruleName, ruleMy, rulePrefer, ruleZhPrefer, ruleAlways, ruleZhRule, ruleProject, ruleZhProject, ruleShouldBe, ruleZhShould, ruleMust} {
		if c, ok := r(rest); ok {
			c.Importance = max(c.Importance, 0.8)
			return c, true
		}
	}
	c := Candidate{Type: Semantic, Content: capitalize(rewrite(rest)), Importance: 0.8, Confidence: 0.75}
	if m := enIsFact.FindStringSubmatch(rest); m != nil {
		factSlot(&c, m[1], m[2])
	} else if m := zhIsFact.FindStringSubmatch(rest); m != nil && !hasAny(m[1], "它", "这", "那") {
		c.Subject, c.Value = "fact:"+normKey(m[1]), normKey(m[2])
	}
	return c, true
}

var pronouns = setOf(`it this that there he she they them these those what which who one`)

// factSlot keys "X is Y" on X.
func factSlot(c *Candidate, x, y string) {
	k := normKey(x)
	first := strings.ToLower(strings.Fields(x + " x")[0])
	if k == "" || pronouns[first] && len(strings.Fields(x)) == 1 {
		return
	}
	c.Subject = "fact:" + k
	c.Value = normKey(y)
}

var enShouldBe = regexp.MustCompile(`(?i)^((?:the|our|my|this|that|your|all|every|each)?\s*(?:[\p{L}\p{N}'’_\-.]+\s+){0,5}?[\p{L}\p{N}'’_\-.]+)\s+(?:should|must|has to|have to|needs to|need to|ought to)\s+(?:always\s+)?be\s+(.+)`)

// "The default timeout should be 30 seconds", "that's wrong, it should be 9090".
func ruleShouldBe(s string) (Candidate, bool) {
	m := enShouldBe.FindStringSubmatch(s)
	if m == nil {
		return Candidate{}, false
	}
	subj, val := strings.TrimSpace(m[1]), strings.TrimSpace(m[2])
	if len(Terms(val)) == 0 && !hasDigit(val) {
		return Candidate{}, false
	}
	first := strings.ToLower(strings.Fields(subj + " x")[0])
	if first == "i" || first == "we" || pronouns[first] && len(strings.Fields(subj)) == 1 {
		return Candidate{}, false // "this must be a bug" is not a rule (corrections are handled by the caller)
	}
	c := Candidate{Type: Semantic, Content: capitalize(rewrite(s)), Importance: 0.75, Confidence: 0.7, Tags: []string{"rule"}}
	if first == "you" {
		c.Type = Preference
		if cat, vals := categorize(val, s); cat != "" {
			sort.Strings(vals)
			c.Subject, c.Value = "pref:"+cat, "+"+strings.Join(vals, " ")
		}
		return c, true
	}
	factSlot(&c, subj, val)
	if c.Subject == "" {
		if cat, vals := categorize(val, s); cat != "" {
			sort.Strings(vals)
			c.Subject, c.Value = "pref:"+cat, "+"+strings.Join(vals, " ")
		}
	}
	return c, true
}

var (
	zhShouldBe = regexp.MustCompile(`^(.{1,30}?)(?:应该是|应当是|必须是|得是|要是|应该为|应该改成|应该改为|应该用|应该使用)(.+)`)
	zhShould   = regexp.MustCompile(`^(?:应该|应当|要|得)(?:是|用|使用|改成|改为)?(.+)`)
)

func ruleZhShould(s string) (Candidate, bool) {
	if m := zhShouldBe.FindStringSubmatch(s); m != nil && len(Terms(m[2])) > 0 {
		c := Candidate{Type: Semantic, Content: s, Importance: 0.75, Confidence: 0.7, Tags: []string{"rule"}}
		if cat, vals := categorize(m[2], s); cat != "" {
			sort.Strings(vals)
			c.Subject, c.Value = "pref:"+cat, "+"+strings.Join(vals, " ")
		} else if k := normKey(m[1]); k != "" && !hasAny(m[1], "它", "这", "那") {
			c.Subject, c.Value = "fact:"+k, normKey(m[2])
		}
		return c, true
	}
	if m := zhShould.FindStringSubmatch(s); m != nil && len(Terms(m[1])) > 0 {
		c := Candidate{Type: Semantic, Content: s, Importance: 0.75, Confidence: 0.7, Tags: []string{"rule"}}
		if cat, vals := categorize(m[1], s); cat != "" {
			sort.Strings(vals)
			c.Subject, c.Value = "pref:"+cat, "+"+strings.Join(vals, " ")
		}
		return c, true
	}
	return Candidate{}, false
}

var (
	enMust = regexp.MustCompile(`(?i)^((?:the|our|my|all|every|each|any|no)?\s*(?:[\p{L}\p{N}'’_\-.]+\s+){0,5}?[\p{L}\p{N}'’_\-.]+)\s+(must not|mustn't|must never|must always|must|shall not|shall|should always|should never|are required to|is required to|are not allowed to|is not allowed to|may not)\s+(.+)`)
	zhMust = regexp.MustCompile(`^(.{1,30}?)(必须|务必|一定要|不能|不得|禁止)(.+)`)
)

// "All PRs must be reviewed", "commits must not touch vendor/".
func ruleMust(s string) (Candidate, bool) {
	if m := enMust.FindStringSubmatch(s); m != nil {
		subj, verb, rest := strings.TrimSpace(m[1]), strings.ToLower(m[2]), strings.TrimSpace(m[3])
		first := strings.ToLower(strings.Fields(subj + " x")[0])
		if pronouns[first] || first == "i" || len(Terms(rest)) == 0 || strings.HasPrefix(strings.ToLower(rest), "have ") {
			return Candidate{}, false
		}
		neg := hasAny(verb, "not", "n't", "never")
		c := Candidate{Type: Preference, Content: capitalize(rewrite(s)), Importance: 0.8, Confidence: 0.75, Tags: []string{"rule"}}
		if first == "we" {
			c.Type = ProjectState
		}
		prefSlot(&c, subj+" "+rest, s, neg, true)
		return c, true
	}
	if m := zhMust.FindStringSubmatch(s); m != nil && len(Terms(m[3])) > 0 && !hasAny(m[1], "它", "这", "那") {
		c := Candidate{Type: Preference, Content: "规则：" + s, Importance: 0.8, Confidence: 0.75, Tags: []string{"rule"}}
		prefSlot(&c, m[1]+m[3], s, hasAny(m[2], "不", "禁止"), true)
		return c, true
	}
	return Candidate{}, false
}

// ---- episodes ----

var enEpisode = regexp.MustCompile(`(?i)^(?:(?:today|yesterday|this (?:morning|afternoon|evening|week)|last (?:night|week|month)|earlier today|just now)[,\s]+)?(?:i|we)(?:'ve| have)?\s+(?:just\s+|finally\s+|already\s+)?` +
	`(finished|shipped|released|deployed|merged|fixed|launched|completed|upgraded|started|published|submitted|closed|signed|booked|moved|got|passed|failed|lost|won|joined|left|bought|sold|renamed|created|set up|installed)\b\s+(.+)`)

func ruleEpisode(s string) (Candidate, bool) {
	m := enEpisode.FindStringSubmatch(s)
	if m == nil || len(Terms(m[2])) == 0 {
		return Candidate{}, false
	}
	return Candidate{Type: Episodic, Content: capitalize(rewrite(s)), Importance: 0.55, Confidence: 0.7, TTL: 90 * 24 * time.Hour}, true
}

// ---- wording ----

var pronounWord = regexp.MustCompile(`(?i)\b(i'm|i am|i've|i have|i'd|i'll|i was|i|my|mine|me|myself|we're|we are|we've|we have|we'd|we'll|we were|we|our|ours|us|ourselves|you're|you are|you've|you have|you'll|you'd|your|yours|yourself|you)\b`)

// rewrite turns first- and second-person words into third person ("my" →
// "the user's", "we" → "the team", "you" → "the assistant") and fixes the
// verb that follows a rewritten subject ("we use" → "the team uses").
func rewrite(s string) string {
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
