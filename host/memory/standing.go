package memory

import (
	"regexp"
	"strings"
)

// A standalone imperative ("Use tabs for indentation.", "Address customers
// by their first name.") sent as a message of its own is a standing rule
// when it says how things are done in general, and a request for work when
// it is about something at hand ("Use the attached file to answer.", "Fix
// the failing test.", "Mark ticket 4821 as resolved."). Measured on the
// labelled set in testdata/imperatives (TestStandaloneImperatives).

var (
	// styleVerbs say how things are done: with a generic object ("use
	// tabs", "address customers") the instruction holds for every turn.
	styleVerbs = setOf(`use keep prefer avoid address sign put cite mask round name label escalate default capitalise capitalize spell
reply respond answer format number quote refer mention bold tag lead begin end limit cap redact stick indent date abbreviate
greet phrase structure order`)
	// workVerbs ask for work; they make a rule only with a generic cue
	// ("Write all SQL keywords in uppercase", "Write Go tests in the
	// table-driven style").
	workVerbs = setOf(`write draft generate add create build make fix refactor summarise summarize translate explain review check run
start book open rename sort call include link mark close set send test document comment log commit deploy merge push`)
	// determiners open a definite or indefinite object: "the failing
	// test", "a poem", "my pull request".
	determiners = setOf(`the a an this that these those my your our his her their its some another which what`)
	// particles may sit between the verb and its object ("reply in
	// Spanish", "sign off", "default to UTC").
	particles = setOf(`in to on at with for off up out by from into as`)

	// genericCue: the instruction is about every case.
	genericCue = regexp.MustCompile(`(?i)\b(?:all|every|everything|everywhere|always|never|whenever|each|any ?time|by default|from now on|at all times|in general|in future|going forward)\b`)
	// whenCue: a condition that recurs ("when the customer writes in Spanish").
	whenCue = regexp.MustCompile(`(?i)\bwhen\b`)
	// mannerCue: a way of writing things ("in the table-driven style", "in uppercase").
	mannerCue = regexp.MustCompile(`(?i)\bin (?:the )?[\w-]+ (?:style|case|format|voice|tone|order|notation)\b|\bin (?:upper ?case|lower ?case|camel ?case|snake_case|kebab-case|title case|british english|american english)\b`)
	// atHand: the instruction is about what is in front of us.
	atHand = regexp.MustCompile(`(?i)\b(?:this|that|these|those|here|attached|above|below|previous|last one|following|my|your answer|your reply)\b|\b(?:I|we) (?:just )?(?:sent|gave|shared|attached|uploaded|pasted|forwarded|mentioned)\b`)
	// instanceRef names one thing: a ticket or issue number, someone's
	// message ("Anna's email").
	instanceRef = regexp.MustCompile(`(?i)\b(?:ticket|issue|pr|order|invoice|case|bug|id)\s*#?\d+|#\d+|\b[A-Z][a-z]+'s\b`)
)

// ruleStanding reads a message that is one imperative sentence.
func ruleStanding(s string) (Candidate, bool) {
	body := strings.TrimRight(strings.TrimSpace(s), ".!;。")
	body = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(body, "Please "), "please "))
	w := strings.Fields(body)
	if len(w) < 3 || strings.HasSuffix(body, "?") || forThisOne.MatchString(body) || atHand.MatchString(body) ||
		instanceRef.MatchString(body) || len(Terms(body)) < 2 {
		return Candidate{}, false
	}
	verb := strings.ToLower(w[0])
	generic := genericCue.MatchString(body)
	switch {
	case styleVerbs[verb]:
		if !generic && !whenCue.MatchString(body) && !genericObject(w[1:]) && !genericSetting(w) {
			return Candidate{}, false
		}
	case workVerbs[verb]:
		// "Write dates as DD/MM/YYYY": a kind of thing, written one way.
		asForm := genericObject(w[1:]) && strings.Contains(strings.ToLower(body), " as ")
		if !generic && !mannerCue.MatchString(body) && !asForm {
			return Candidate{}, false
		}
	default:
		return Candidate{}, false
	}
	c := Candidate{Type: Preference, Content: capitalize(rewrite(body)), Importance: 0.7, Confidence: 0.6, Tags: []string{"rule"}}
	if k := normKey(body); k != "" {
		c.Subject, c.Value = "rule:"+k, "+"
	}
	return c, true
}

// genericObject: the verb's object is a kind of thing, not one thing ("tabs",
// "customers", "metric units", "off support replies"), so neither a
// determiner nor a pronoun opens it.
func genericObject(rest []string) bool {
	for _, x := range rest {
		x = strings.ToLower(strings.Trim(x, `"'“”‘’,`))
		if particles[x] {
			continue
		}
		return x != "" && !determiners[x] && !pronouns[x]
	}
	return false
}

// genericSetting: the instruction ends on where it holds, a kind of
// document or message ("… in agreements", "… for customer emails").
func genericSetting(w []string) bool {
	for i := len(w) - 2; i >= max(1, len(w)-4); i-- {
		if p := strings.ToLower(w[i]); p == "in" || p == "for" || p == "on" {
			rest := w[i+1:]
			for _, x := range rest {
				if determiners[strings.ToLower(x)] || pronouns[strings.ToLower(x)] {
					return false
				}
			}
			last := strings.ToLower(strings.Trim(rest[len(rest)-1], `"'.,`))
			return len(last) > 3 && strings.HasSuffix(last, "s") && !strings.HasSuffix(last, "ss")
		}
	}
	return false
}
