package judge

import "testing"

func TestMajority(t *testing.T) {
	tests := []struct {
		votes []string
		want  float64
	}{
		{[]string{"1", "1", "-1"}, 1},
		{[]string{"-1", "-1", "1"}, -1},
		{[]string{"1", "-1", "0"}, 0},
		{[]string{"1", "-1"}, 0},
		{[]string{"fail", "fail", "1"}, 1},
		{[]string{"fail", "fail"}, 0},
		{nil, 0},
		{[]string{"0", "0", "1"}, 0},
	}
	for _, tc := range tests {
		if got := Majority(tc.votes); got != tc.want {
			t.Errorf("Majority(%v) = %v, want %v", tc.votes, got, tc.want)
		}
	}
}
