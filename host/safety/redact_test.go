package safety

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		in, secret, kind string
	}{
		{"my key is sk-proj-abcdefghijklmnopqrstuvwxyz012345", "sk-proj-abcdefghijklmnopqrstuvwxyz012345", "api_key"},
		{"use sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA for claude", "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA", "api_key"},
		{"token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB", "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB", "api_key"},
		{"aws AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE", "aws_key"},
		{"Authorization: Bearer abc.def-ghi_jkl.mnopqrstu", "abc.def-ghi_jkl.mnopqrstu", "token"},
		{"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "eyJhbGciOiJIUzI1NiJ9", "token"},
		{"my password is hunter2!", "hunter2!", "password"},
		{"Password: correct-horse-battery", "correct-horse-battery", "password"},
		{"db at postgres://admin:s3cr3tpw@db.internal:5432/app", "admin:s3cr3tpw", "credentials"},
		{"api_key = 9f8e7d6c5b4a39281706", "9f8e7d6c5b4a39281706", "secret"},
		{"client secret: AbCdEf123456", "AbCdEf123456", "secret"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA", "private_key"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA", "b3BlbnNzaC1rZXktdjEAAAAA", "private_key"},
		{"card 4111 1111 1111 1111 exp 12/29", "4111 1111 1111 1111", "card"},
		{"card 4012-8888-8888-1881", "4012-8888-8888-1881", "card"},
		{"我的密码是abc12345", "abc12345", "password"},
		{"API密钥：sk_live_1234567890abcdefgh", "sk_live_1234567890abcdefgh", "api_key"},
		{"令牌是 AbCdEfGhIjKl", "AbCdEfGhIjKl", "secret"},
	}
	for _, tt := range tests {
		out, n := Redact(tt.in)
		if n == 0 || strings.Contains(out, tt.secret) || !strings.Contains(out, RedactedPrefix+tt.kind+"]") {
			t.Errorf("Redact(%q) = %q (%d), want %s redacted as %s", tt.in, out, n, tt.secret, tt.kind)
		}
		if again, m := Redact(out); again != out || m != 0 {
			t.Errorf("not idempotent: %q -> %q", out, again)
		}
	}
	for _, clean := range []string{
		"the order id is 1234567890123 (not a card)", // fails Luhn
		"I prefer tabs for indentation",
		"the token limit is large",
		"password reset flow is broken",
		"commit 3f2a9c1d4e5b6a7980716253",
		"call 138 0013 8000",
	} {
		if out, n := Redact(clean); n != 0 || out != clean {
			t.Errorf("Redact(%q) = %q, want unchanged", clean, out)
		}
	}
}

func TestLuhn(t *testing.T) {
	for s, want := range map[string]bool{"4111111111111111": true, "4111111111111112": false, "0000000000000": false, "79927398713": false} {
		if luhn(s) != want {
			t.Errorf("luhn(%s) != %v", s, want)
		}
	}
}

// FuzzRedact: redaction never panics, is idempotent, keeps valid UTF-8 valid,
// and a secret planted anywhere in the input does not survive.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"", "hello", "sk-abcdefghijklmnopqrstuvwxyz", "password: x", "4111 1111 1111 1111", "https://u:p@h",
		"-----BEGIN PRIVATE KEY-----", "密码是123456", "Bearer abcdefghijklmnop", "[REDACTED:api_key]", "token: [REDACTED:x]y"} {
		f.Add(s, uint8(0))
	}
	secrets := []string{"sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3", "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB", "AKIAABCDEFGHIJKLMNOP", "4111 1111 1111 1111"}
	f.Fuzz(func(t *testing.T, in string, pick uint8) {
		out, _ := Redact(in)
		if again, _ := Redact(out); again != out {
			t.Fatalf("not idempotent:\n in %q\nout %q\nagain %q", in, out, again)
		}
		if utf8.ValidString(in) && !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out of valid input %q", in)
		}
		secret := secrets[int(pick)%len(secrets)]
		cut := len(in) / 2
		for cut > 0 && !utf8.RuneStart(in[cut]) {
			cut--
		}
		planted := in[:cut] + " " + secret + " " + in[cut:]
		if out, _ := Redact(planted); strings.Contains(out, secret) {
			t.Fatalf("secret survived in %q", out)
		}
	})
}
