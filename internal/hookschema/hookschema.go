// Package hookschema checks what aipm hook prints against the clients'
// documented output shapes (testdata/hooks), for the tests of the hook and
// of its callers.
package hookschema

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/jsonschema-go/jsonschema"
)

// Check checks out, what aipm hook printed for client at event, against
// that client's documented output shape in schemaDir (testdata/hooks:
// <client>-<event>.schema.json). Zero bytes always pass: both clients take
// no output as "nothing to say".
func Check(schemaDir, client, event string, out []byte) error {
	if len(out) == 0 {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(schemaDir, client+"-"+event+".schema.json"))
	if err != nil {
		return fmt.Errorf("schema of %s %s: %w", client, event, err)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(data, &schema); err != nil {
		return fmt.Errorf("schema of %s %s: %w", client, event, err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return fmt.Errorf("schema of %s %s: %w", client, event, err)
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return fmt.Errorf("%s %s output is not JSON: %w: %q", client, event, err, out)
	}
	if err := resolved.Validate(v); err != nil {
		return fmt.Errorf("%s %s output %s: %w", client, event, out, err)
	}
	return nil
}
