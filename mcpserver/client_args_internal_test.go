package mcpserver

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestNoToolDeclaresClientArguments: a client's own argument is dropped
// before the schema check, so no tool may take an argument of its name.
func TestNoToolDeclaresClientArguments(t *testing.T) {
	for _, spec := range tools() {
		in, _ := servedSchemas(spec.tool.Name)
		for name := range clientArguments {
			if gjson.GetBytes(in, "properties."+gjson.Escape(name)).Exists() {
				t.Errorf("tool %s declares %s, an argument clients add to every call on their own (clientArguments): rename it", spec.tool.Name, name)
			}
		}
	}
}

func TestWithoutClientArguments(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{`{"a":1,"wait_for_previous":true}`, `{"a":1}`},
		{`{"wait_for_previous":false}`, `{}`},
		{`{"wait_for_previous":"true"}`, `{"wait_for_previous":"true"}`},
		{`{"note":"wait_for_previous"}`, `{"note":"wait_for_previous"}`},
		{`[1]`, `[1]`},
	} {
		if got := string(withoutClientArguments([]byte(c.in))); got != c.want {
			t.Errorf("withoutClientArguments(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
