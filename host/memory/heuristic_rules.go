package memory

import (
	"sort"
	"strings"
	"time"
	"unicode"
)

// The heuristic extractor's rules, one function per family of wording
// (rules in heuristic.go's list are tried in order on each statement).

// ---- names ----

var (
	enCallMe = mustGuard(`(?i)\b(?:please\s+)?(?:call me|you can call me|refer to me as|address me as)\s+(.+)`)
	enMyName = mustGuard(`(?i)\b(?:my name is|my name's|i am called|i'm called|i go by)\s+(.+)`)
	zhCallMe = mustGuard(`(?:请)?(?:叫我|称呼我为?|称我为?|喊我)\s*([^，,。.！!\s]{1,16})`)
	zhMyName = mustGuard(`^我(?:的名字|的姓名)?(?:叫|是叫|名叫)\s*([^，,。.！!\s]{1,16})|^我的名字是\s*([^，,。.！!\s]{1,16})`)
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

var nameStop = mustGuard(`(?i)\s+(?:from now on|please|instead|going forward|in the future|and|but|because|since|when|if|from|—|-).*$|[,;:(].*$`)

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
	enMy        = mustGuard(`(?i)^(?:and\s+)?(my|our)\s+((?:[\p{L}\p{N}'’_\-]+\s+){0,3}?[\p{L}\p{N}'’_\-]+)\s+(?:is now|are now|is|are|=)\s+(.+)`)
	zhMy        = mustGuard(`^(我的|我们的)([^，,。是]{1,12}?)(?:是|为|叫|用的是)(.+)`)
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

var enPrefer = mustGuard(`(?i)^(?:.{0,40}?[,;]\s*)?(?:and\s+)?i(?:'d|\s+would|'m|\s+am)?(?:\s+(?:really|strongly|generally|usually|still|now|also|much|definitely|absolutely|personally|mostly|always|do|actually))*\s+` +
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
	zhPrefer   = mustGuard(`^((?:[^，,。]{0,12}[，,])?)我(?:个人)?(?:更|比较|最|很|还是|一直|通常|也|现在|其实|真的|特别|非常)*(喜欢|偏好|偏爱|倾向于|倾向|习惯于|习惯|爱用|想要|希望|要求)(.+)`)
	zhDislike  = mustGuard(`^((?:[^，,。]{0,12}[，,])?)我(?:个人)?(?:很|真的|特别|非常|一直|也|现在)*(不喜欢|讨厌|不想要|不希望|不想|受不了|不习惯|反感)(.+)`)
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
	enConnect   = mustGuard(`(?i)\s+(?:over|rather than|instead of|than|and not|not|vs\.?|versus)\s+|,\s*(?:not|never)\s+|\s+to\s+(?:using\s+)?`)
	enQualifier = mustGuard(`(?i)\s+(?:for|when|in|on|while|during|with)\s+(.+)$`)
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
	enRule = mustGuard(`(?i)^(?:please\s+)?(?:(?:from now on|going forward|from here on|in (?:the )?future|henceforth)[,\s]+)?(?:please\s+)?(?:(you|i|we)\s+(?:should\s+|must\s+|will\s+)?)?` +
		`(always|never|don't ever|do not ever|don't|do not|make sure(?: to| that| you)?|remember to|don't forget to|do not forget to|be sure to|stop|keep)\s+(.+)`)
	enFromNow = mustGuard(`(?i)^(?:from now on|going forward|from here on|in (?:the )?future|henceforth)[,\s]+(?:please\s+)?(.+)`)
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
	if verb == "keep" && who == "" && (atHand.MatchString(rest) || instanceRef.MatchString(rest)) {
		return Candidate{}, false // "keep the meeting notes I sent you": hold on to one thing
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
		if verb == "make sure" || verb == "make sure that" || verb == "make sure you" {
			lead = "Make sure " // "make sure the macro works …"
		}
	}
	typ := Preference
	switch who {
	case "i":
		lead = "The user " + strings.ToLower(strings.TrimSpace(lead)) + " "
		if verb == "don't" || verb == "do not" {
			lead = "The user does not "
		}
		if verb == "always" || verb == "never" {
			rest = rewriteVerbAfter(rest)
		}
	case "we":
		typ = ProjectState
		lead = "The team " + strings.ToLower(strings.TrimSpace(lead)) + " "
		if verb == "don't" || verb == "do not" {
			lead = "The team does not "
		}
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
	zhRulePos = mustGuard(`^(?:请你|请|你)?(?:以后|今后|从现在开始|从今以后|以后请|记得)?[，,]?(?:请|你)?(总是|一直|始终|每次都|永远都|永远|务必|一定要|必须|记得)(.+)`)
	zhFromNow = mustGuard(`^(?:请你|请|你)?(?:以后|今后|从现在开始|从今以后|往后)[，,]?(?:请|你)?(?:都|就)?(.+)`)
	zhRuleNeg = mustGuard(`^(?:请你|请|你)?(?:以后|今后|从现在开始|从今以后|以后请)?[，,]?(?:请|你)?(永远不要|永远别|绝对不要|千万不要|千万别|不要再|不要|别再|别|不许|禁止|不准|不能|不可以)(.+)`)
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
	enProject = mustGuard(`(?i)^(?:.{0,30}?[,;]\s*)?(?:` +
		`we(?:'re| are)?(?:\s+(?:now|currently|mostly|mainly|also|still|actually))*\s+(use|using|run|running|deploy|deploying|host|hosting|rely on|relying on|build with|building with|write|writing|code in|develop in|standardi[sz]ed on|migrated to|switched to|moved to|changed to|are moving to|are migrating to|are switching to|'re moving to|'re migrating to|'re switching to|target|targeting|support|ship)` +
		`|we(?:'ve| have)\s+(switched to|moved to|migrated to|changed to|standardi[sz]ed on|adopted|chosen|picked|decided on|decided to use)` +
		`|(?:our|the)\s+(?:stack|project|team|codebase|code base|repo|repository|app|application|service|backend|frontend|ci|infra|infrastructure|api|website|site|product|company|org|organization|database|db|deployment|server|servers|cluster)\s+(uses|is using|runs on|runs|relies on|is built on|is built with|is written in|is deployed (?:on|to)|lives (?:on|in)|has moved to|moved to|switched to|migrated to|is hosted on|targets|depends on)` +
		`)\s+(.+)`)
)

var enSwitched = mustGuard(`(?i)^(?:.{0,30}?[,;]\s*)?(?:we|(?:the|our) (?:team|company|org|organi[sz]ation|project))(?:'ve| have| has)?(?:\s+(?:just|now|finally|recently|already))*\s+(switched|moved|migrated|changed|ported|upgraded)\s+((?:the|our)\s+)?((?:[\p{L}\p{N}_\-]+\s+){0,3}?[\p{L}\p{N}_\-]+)\s+(?:over\s+)?(?:to|onto)\s+(.+)`)

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
	zhProject = mustGuard(`^(?:[^，,。]{0,12}[，,])?(?:我们团队|我们公司|我们的项目|我们项目|这个项目|我们|团队|公司|项目|代码库|仓库)(?:的([^，,。]{1,8}?))?(?:现在|目前|一直|都|也|主要|已经)*(用|使用|在用|采用|用的是|基于|跑在|部署在|改用|换成|换用|迁移到|切换到|改成)(.+)`)
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
	enRemember = mustGuard(`(?i)^(?:please\s+)?(?:remember|keep in mind|note|noted|fyi|for your information|just so you know|for context|for (?:future|your) reference|don't forget|do not forget|bear in mind|important|heads up|be aware)\b(?:\s+that)?[:,\s]+(.+)`)
	zhRemember = mustGuard(`^(?:请)?(?:记住|记一下|记下|记得|注意|备注|提醒一下|要知道|你要知道)[，,:：\s]*(.+)`)
	enIsFact   = mustGuard(`(?i)^(?:the|our|my|this|that)?\s*((?:[\p{L}\p{N}'’_\-]+\s+){0,4}?[\p{L}\p{N}'’_\-]+)\s+(?:is|are|was|=|should be|must be|has to be|needs to be|will be)\s+(.+)`)
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

// quantifiedNP is a subject about all things of a kind, a relative clause
// included ("any ticket that mentions a chargeback or legal action").
const quantifiedNP = `(?:any|every|all|each|no)\s+(?:[\p{L}\p{N}'’_\-.,]+\s+){0,11}?[\p{L}\p{N}'’_\-.]+`

var enShouldBe = mustGuard(`(?i)^((?:the|our|my|this|that|your|all|every|each)?\s*(?:[\p{L}\p{N}'’_\-.]+\s+){0,5}?[\p{L}\p{N}'’_\-.]+|` + quantifiedNP + `)\s+(?:should|must|has to|have to|needs to|need to|ought to)\s+(?:always\s+)?be\s+(.+)`)

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
	if first != "you" && isGeneral(s) {
		// "All timestamps should be in ISO 8601": a rule about a kind of thing.
		c.Type, c.Importance = Preference, 0.8
		c.Subject, c.Value = "pref:"+normKey(subj), normKey(val)
		if cat, vals := categorize(val, s); cat != "" && len(vals) > 0 {
			sort.Strings(vals)
			c.Subject, c.Value = "pref:"+cat, "+"+strings.Join(vals, " ")
		}
		return c, true
	}
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
	zhShouldBe = mustGuard(`^(.{1,30}?)(?:应该是|应当是|必须是|得是|要是|应该为|应该改成|应该改为|应该用|应该使用)(.+)`)
	zhShould   = mustGuard(`^(?:应该|应当|要|得)(?:是|用|使用|改成|改为)?(.+)`)
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
	enMust = mustGuard(`(?i)^((?:the|our|my|all|every|each|any|no)?\s*(?:[\p{L}\p{N}'’_\-.]+\s+){0,5}?[\p{L}\p{N}'’_\-.]+?|` + quantifiedNP + `)\s+(?:only\s+|also\s+|still\s+|really\s+|always\s+)?(must not|mustn't|must never|must always|must|shall not|shall|should always|should never|are required to|is required to|are not allowed to|is not allowed to|may not|has to|have to|needs|need|requires|require)\s+(.+)`)
	zhMust = mustGuard(`^(.{1,30}?)(必须|务必|一定要|不能|不得|禁止)(.+)`)
)

// "All PRs must be reviewed", "commits must not touch vendor/", "the
// report needs a front-matter block" (→ "Every report needs …").
func ruleMust(s string) (Candidate, bool) {
	if m := enMust.FindStringSubmatch(s); m != nil {
		subj, verb, rest := strings.TrimSpace(m[1]), strings.ToLower(m[2]), strings.TrimSpace(m[3])
		first := strings.ToLower(strings.Fields(subj + " x")[0])
		need := strings.HasPrefix(verb, "need") || strings.HasPrefix(verb, "require")
		if pronouns[first] || first == "i" || len(Terms(rest)) == 0 || mustHaveDone(rest) ||
			need && (first == "we" || first == "you" || strings.HasPrefix(strings.ToLower(rest), "to ")) {
			return Candidate{}, false
		}
		neg := hasAny(verb, "not", "n't", "never")
		content := s
		if need {
			// A requirement of a kind of thing, not of one answer.
			if w := strings.Fields(subj); len(w) > 1 && (strings.EqualFold(w[0], "the") || strings.EqualFold(w[0], "this") || strings.EqualFold(w[0], "your")) {
				content = generalNP(strings.Join(w[1:], " ")) + s[len(subj):]
			}
		}
		c := Candidate{Type: Preference, Content: capitalize(rewrite(content)), Importance: 0.8, Confidence: 0.75, Tags: []string{"rule"}}
		if first == "we" {
			c.Type = ProjectState
		}
		// The slot's value comes from what is required, not from the
		// subject ("every JSON file … must have …" is not about JSON).
		prefSlot(&c, rest, s, neg, true)
		if strings.HasPrefix(c.Subject, "rule:") || c.Subject == "" {
			if k := normKey(subj + " " + rest); k != "" {
				c.Subject = "rule:" + k
			}
		}
		return c, true
	}
	if m := zhMust.FindStringSubmatch(s); m != nil && len(Terms(m[3])) > 0 && !hasAny(m[1], "它", "这", "那") {
		c := Candidate{Type: Preference, Content: "规则：" + s, Importance: 0.8, Confidence: 0.75, Tags: []string{"rule"}}
		prefSlot(&c, m[1]+m[3], s, hasAny(m[2], "不", "禁止"), true)
		return c, true
	}
	return Candidate{}, false
}

// mustHaveDone: "must have missed it" is a guess, not a rule ("must have
// a header" is).
func mustHaveDone(rest string) bool {
	w := strings.Fields(strings.ToLower(rest) + " x x")
	if w[0] != "have" {
		return false
	}
	p := w[1]
	return strings.HasSuffix(p, "ed") || strings.HasSuffix(p, "en") || participles[p]
}

var participles = setOf(`been gone done seen made got had lost left forgot put run sent`)

// ---- episodes ----

var enEpisode = mustGuard(`(?i)^(?:(?:today|yesterday|this (?:morning|afternoon|evening|week)|last (?:night|week|month)|earlier today|just now)[,\s]+)?(?:i|we)(?:'ve| have)?\s+(?:just\s+|finally\s+|already\s+)?` +
	`(finished|shipped|released|deployed|merged|fixed|launched|completed|upgraded|started|published|submitted|closed|signed|booked|moved|got|passed|failed|lost|won|joined|left|bought|sold|renamed|created|set up|installed)\b\s+(.+)`)

func ruleEpisode(s string) (Candidate, bool) {
	m := enEpisode.FindStringSubmatch(s)
	if m == nil || len(Terms(m[2])) == 0 {
		return Candidate{}, false
	}
	return Candidate{Type: Episodic, Content: capitalize(rewrite(s)), Importance: 0.55, Confidence: 0.7, TTL: 90 * 24 * time.Hour}, true
}
