package safety

import (
	"encoding/json"
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
		// issue 11's wifi password, as people say it
		{"the office wifi password is BlueElephant42", "BlueElephant42", "password"},
		{"office wifi pw BlueElephant42, remember it", "BlueElephant42", "password"},
		{"Wifi password for the office: BlueElephant42", "BlueElephant42", "password"},
		{"BlueElephant42 is the wifi password", "BlueElephant42", "password"},
		{"BlueElephant42 is our office wifi password.", "BlueElephant42", "password"},
		{`{"password": "hunter2hunter2"}`, "hunter2hunter2", "password"},
		{`config = {'api_key': 'abcdef123456789'}`, "abcdef123456789", "secret"},
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
		"the password reset page is broken again",
		"my password manager is great",
		"this is the password field",
		"Tabs is my preference",
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

func TestScrubValues(t *testing.T) {
	user, found := RedactCollect("the office wifi password is BlueElephant42")
	if len(found) != 1 || found[0] != "BlueElephant42" || strings.Contains(user, "BlueElephant42") {
		t.Fatalf("RedactCollect: %q %q", user, found)
	}
	if got := ScrubValues("Saved: BlueElephant42. Anything else?", found); strings.Contains(got, "BlueElephant42") {
		t.Fatalf("echo kept the secret: %q", got)
	}
}

func TestRedactJSON(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"the office wifi password is BlueElephant42"},` +
		`{"role":"assistant","content":"Noted: \"BlueElephant42\".\nAnything else?"},{"role":"user","content":"password reset is broken, see https://x.example"}],` +
		`"tools":[{"type":"function","function":{"name":"login","parameters":{"type":"object"}}}],"n":1}`)
	out, found := RedactJSON(body)
	if len(found) == 0 || strings.Contains(string(out), "BlueElephant42") || !json.Valid(out) {
		t.Fatalf("RedactJSON: %q %s", found, out)
	}
	var v struct {
		Model    string `json:"model"`
		Messages []struct{ Content string }
	}
	if err := json.Unmarshal(out, &v); err != nil || v.Model != "m" || len(v.Messages) != 3 || v.Messages[2].Content != "password reset is broken, see https://x.example" {
		t.Fatalf("structure changed: %+v %v", v, err)
	}
	if again, m := RedactJSON(out); string(again) != string(out) || len(m) != 0 {
		t.Fatalf("not idempotent: %s", again)
	}
	clean := []byte(`{"messages":[{"role":"user","content":"I prefer tabs. Use the API key from the environment."}]}`)
	if out, n := RedactJSON(clean); len(n) != 0 || string(out) != string(clean) {
		t.Fatalf("clean body changed: %s", out)
	}
}

// FuzzRedactJSON: a valid document stays valid, a planted password goes,
// and redacting twice changes nothing.
func FuzzRedactJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":"password is hunter22"}`, `["x\"y","pw BlueElephant42"]`, `{"k":{"password":"abc123XYZ"}}`, `"top"`, `{"a":"\u0070assword: x1y2z3"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		out, _ := RedactJSON([]byte(doc))
		if json.Valid([]byte(doc)) && !json.Valid(out) {
			t.Fatalf("valid %q became invalid %q", doc, out)
		}
		if again, _ := RedactJSON(out); string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q -> %q", doc, out, again)
		}
		if !json.Valid([]byte(doc)) {
			return
		}
		planted, _ := json.Marshal(map[string]any{"doc": json.RawMessage(doc), "note": "my password is Zq9TopSecret"})
		if out, _ := RedactJSON(planted); strings.Contains(string(out), "Zq9TopSecret") {
			t.Fatalf("planted password kept: %s", out)
		}
	})
}
