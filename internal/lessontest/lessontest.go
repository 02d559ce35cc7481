// Package lessontest is the lesson the next-session tests teach (issue
// #16): three plain statements of one session, none marked durable, so they
// wait for a batch or the session's end unless a new session catches up
// with them; and the request that opens the next session. The proxy, hook
// and OpenClaw tests teach the same lesson so their figures compare.
package lessontest

// Fact is one statement the user makes and what must come back of it.
type Fact struct{ Say, Want string }

// Lesson is what a user teaches in session A.
var Lesson = []Fact{
	{"I prefer tabs for indentation.", "The user prefers tabs for indentation."},
	{"We use PostgreSQL 16 for the main database.", "PostgreSQL 16"},
	{"My timezone is UTC+8.", "UTC+8"},
}

// NewServiceAsk opens session B. It names what the lesson's facts serve (a
// database, a schedule in the user's time): facts come only to turns about
// them, standing rules to every turn.
const NewServiceAsk = "Set up a new service for me, with its database, and schedule its jobs in my timezone."

// Says lists what the user says, in order.
func Says() []string {
	out := make([]string, len(Lesson))
	for i, f := range Lesson {
		out[i] = f.Say
	}
	return out
}

// Wants lists what must come back, in order.
func Wants() []string {
	out := make([]string, len(Lesson))
	for i, f := range Lesson {
		out[i] = f.Want
	}
	return out
}
