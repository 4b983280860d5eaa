package clientconfig

import (
	"os"
	"strings"
)

// Endpoint is where a client sends its model requests, and the credential
// it sends, as its own rules find them in the environment it runs with,
// its command line and the user's own files (nothing is sent anywhere).
type Endpoint struct {
	// URL is the base URL of the model API; "" when it is unset (From
	// says why) or Unknown.
	URL string
	// From says where URL came from: "ANTHROPIC_BASE_URL", "the default:
	// ANTHROPIC_BASE_URL is unset", "openai_base_url in <file>", ...
	From string
	// Credential says where the credential was found ("ANTHROPIC_API_KEY",
	// a file's path); "" when none was, and the client needs one.
	Credential string
	// NoCredential says what to do when Credential is "" and one is needed.
	NoCredential string
	// Unknown is why aipm cannot tell the endpoint ("" when it can): a
	// cloud provider's, or a provider of the client's own.
	Unknown string
}

// Regular says whether path is a regular file.
func Regular(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// FileHas says whether the file at path holds text (a small user file).
func FileHas(path, text string) bool {
	data, err := os.ReadFile(path)
	return err == nil && strings.Contains(string(data), text)
}
