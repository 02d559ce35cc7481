package memory

import "testing"

func TestPronounFor(t *testing.T) {
	tests := []struct {
		word, repl string
		subject    bool
	}{
		{"i", "the user", true},
		{"i'm", "the user is", false},
		{"i am", "the user is", false},
		{"i've", "the user has", false},
		{"i have", "the user has", false},
		{"i'd", "the user would", false},
		{"i'll", "the user will", false},
		{"i was", "the user was", false},
		{"my", "the user's", false},
		{"mine", "the user's", false},
		{"me", "the user", false},
		{"myself", "the user", false},
		{"we", "the team", true},
		{"we're", "the team is", false},
		{"we are", "the team is", false},
		{"we've", "the team has", false},
		{"we have", "the team has", false},
		{"we'd", "the team would", false},
		{"we'll", "the team will", false},
		{"we were", "the team was", false},
		{"our", "the team's", false},
		{"ours", "the team's", false},
		{"us", "the team", false},
		{"ourselves", "the team", false},
		{"you", "the assistant", true},
		{"you're", "the assistant is", false},
		{"you are", "the assistant is", false},
		{"you've", "the assistant has", false},
		{"you have", "the assistant has", false},
		{"you'll", "the assistant will", false},
		{"you'd", "the assistant would", false},
		{"your", "the assistant's", false},
		{"yours", "the assistant's", false},
		{"yourself", "the assistant", false},
		// Not in the table: unchanged, never a subject.
		{"they", "they", false},
		{"I", "I", false}, // callers lower-case first
		{"", "", false},
	}
	for _, tt := range tests {
		repl, subject := pronounFor(tt.word)
		if repl != tt.repl || subject != tt.subject {
			t.Errorf("pronounFor(%q) = %q, %v; want %q, %v", tt.word, repl, subject, tt.repl, tt.subject)
		}
	}
}

// TestPronounWord: a longer form wins over its prefix, whole words only,
// any case.
func TestPronounWord(t *testing.T) {
	tests := []struct{ in, first string }{
		{"I am here", "I am"},
		{"I'm here", "I'm"},
		{"I  am here", "I"},
		{"Myself included", "Myself"},
		{"my own", "my"},
		{"Yours truly", "Yours"},
		{"YOU'RE right", "YOU'RE"},
		{"ourselves alone", "ourselves"},
		{"we were late", "we were"},
		{"an iMac and a mesh", ""},
		{"items in the US", "US"},
	}
	for _, tt := range tests {
		if got := pronounWord.FindString(tt.in); got != tt.first {
			t.Errorf("pronounWord in %q: %q, want %q", tt.in, got, tt.first)
		}
	}
}

func TestRewriteForms(t *testing.T) {
	tests := []struct{ in, want string }{
		{"I'm on call this week", "the user is on call this week"},
		{"We're moving to Postgres", "the team is moving to Postgres"},
		{"you are too verbose", "the assistant is too verbose"},
		{"I was told to use tabs", "the user was told to use tabs"},
		{"Our team ships on Fridays", "the team ships on Fridays"},
		{"tell me about yourself", "tell the user about the assistant"},
		{"that laptop is mine, not yours", "that laptop is the user's, not the assistant's"},
		{"they use Go", "they use Go"},
	}
	for _, tt := range tests {
		if got := rewrite(tt.in); got != tt.want {
			t.Errorf("rewrite(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
