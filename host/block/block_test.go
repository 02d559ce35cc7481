package block

import "testing"

func TestStrip(t *testing.T) {
	b := Begin + "\n## Skills\n\nx\n" + End
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"system prompt\n\n" + b, "system prompt"},
		{b + "\nafter", "after"},
		{"a " + b + "\n\nb " + b, "a\n\nb"},
		{"[Mon 2026-11-30 03:16 UTC] " + b + "\n\nHello", "[Mon 2026-11-30 03:16 UTC]\n\nHello"},
		{"x " + Begin + " unterminated", "x"},
		{b, ""},
	}
	for _, tt := range tests {
		if got := Strip(tt.in); got != tt.want {
			t.Errorf("Strip(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
