package backend

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// DecodeOptions reads a backend's options (the config's [backends.NAME] table, as the
// daemon passes them in Env.Options) over what into already holds (its defaults),
// refusing a key into has no field for. Errors name the backend.
func DecodeOptions(name string, opts map[string]any, into any) error {
	if len(opts) == 0 {
		return nil
	}
	data, err := toml.Marshal(opts)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(into); err != nil {
		var se *toml.StrictMissingError
		if errors.As(err, &se) && len(se.Errors) > 0 {
			return fmt.Errorf("%s: unknown setting %q", name, strings.Join(se.Errors[0].Key(), "."))
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
