package tokenizer

import (
	"encoding/json"
	"fmt"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites text before pre-tokenization. nil means none.
type normalizer func(string) string

func parseNormalizer(data json.RawMessage) (normalizer, error) {
	c, err := parseComponent(data)
	if err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	if c == nil {
		return nil, nil
	}
	switch c.Type {
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Sequence":
		var steps []normalizer
		for _, sub := range c.Normalizers {
			n, err := parseNormalizer(sub)
			if err != nil {
				return nil, err
			}
			if n != nil {
				steps = append(steps, n)
			}
		}
		if len(steps) == 0 {
			return nil, nil
		}
		return func(s string) string {
			for _, n := range steps {
				s = n(s)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("normalizer %q is not supported (NFC, NFD, NFKC, NFKD, Sequence)", c.Type)
}
