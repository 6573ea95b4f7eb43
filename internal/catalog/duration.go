package catalog

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// UnmarshalYAML reads a Go duration string ("1.5s", "200ms", "2m"). A bare
// number other than 0 is refused: "30" could mean seconds or milliseconds,
// and guessing wrong turns a timeout into something very different. A
// negative duration is refused; null leaves the value unchanged.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected a duration such as \"30s\", got %s", describe(n))
	}
	if n.ShortTag() == "!!null" {
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		if n.ShortTag() == "!!int" || n.ShortTag() == "!!float" {
			return fmt.Errorf("duration %q has no unit: write e.g. \"%ss\" or \"%sms\"", n.Value, n.Value, n.Value)
		}
		return fmt.Errorf("invalid duration %q: use a Go duration such as \"1.5s\", \"200ms\" or \"2m\"", n.Value)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration in Go's notation ("1m30s"), which
// UnmarshalYAML reads back unchanged.
func (d Duration) MarshalYAML() (any, error) {
	return time.Duration(d).String(), nil
}

// String returns the duration in Go's notation.
func (d Duration) String() string { return time.Duration(d).String() }
