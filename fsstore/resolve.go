package fsstore

import (
	"aipm/fsstore/internal/storage"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// nounOf names a collection's entities in messages.
var nounOf = map[string]string{
	storage.Conversations: "conversation",
	storage.Delegations:   "delegation",
	storage.Tasks:         "task",
	storage.Sessions:      "session",
}

// listCommandOf is the aipm command that lists a collection's ids.
var listCommandOf = map[string]string{
	storage.Conversations: "aipm conversations",
	storage.Delegations:   "aipm delegations",
	storage.Tasks:         "aipm task list",
	storage.Sessions:      "aipm status",
}

// maxListed is how many matches an ambiguous prefix lists.
const maxListed = 10

// ResolveID returns the id in collection that arg names: the whole id, or
// any unique prefix of it, with or without its "tsk_"-style prefix, in
// either case. No match is ErrNotFound, several are ErrAmbiguous (the
// message lists them), a malformed arg is ErrInvalid.
func (s *Store) ResolveID(collection, arg string) (string, error) {
	prefix, ok := storage.IDPrefixOf[collection]
	if !ok {
		return "", fmt.Errorf("collection %q has no id documents", collection)
	}
	noun := nounOf[collection]
	body := strings.ToUpper(arg)
	if b, ok := strings.CutPrefix(body, strings.ToUpper(prefix)); ok {
		body = b
	}
	if len(body) == 0 || len(body) > 26 || !storage.IsCrockford(body) { // ^[0-9A-HJKMNP-TV-Z]{1,26}$
		return "", storage.Kindf(storage.ErrInvalid, "%q is not a %s id: give the id aipm printed (%s followed by 26 characters), or any unique start of it (see %s)", arg, noun, prefix, listCommandOf[collection])
	}
	want := prefix + body
	if len(body) == 26 {
		if _, err := os.Stat(s.docPathUnchecked(collection, want)); err == nil {
			return want, nil
		}
	}
	ids, err := s.IDs(collection)
	if err != nil {
		return "", err
	}
	var matches []string
	for _, id := range ids {
		if strings.HasPrefix(id, want) {
			matches = append(matches, id)
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], nil
	case len(matches) == 0 && len(body) == 26:
		return "", storage.Kindf(storage.ErrNotFound, "%s %s does not exist: see %s", noun, want, listCommandOf[collection])
	case len(matches) == 0:
		return "", storage.Kindf(storage.ErrNotFound, "no %s id starts with %q: see %s", noun, arg, listCommandOf[collection])
	}
	listed := matches
	if len(listed) > maxListed {
		listed = append(listed[:maxListed:maxListed], fmt.Sprintf("and %d more", len(matches)-maxListed))
	}
	return "", storage.Kindf(storage.ErrAmbiguous, "%q matches %d %ss (%s): type more of the id", arg, len(matches), noun, strings.Join(listed, ", "))
}

func (s *Store) docPathUnchecked(collection, id string) string {
	return s.files.CollectionDir(collection) + string(os.PathSeparator) + id + ".json"
}

// IDs lists the ids of collection's documents, sorted (so oldest first:
// ids are time-sortable). A collection not created yet has none.
func (s *Store) IDs(collection string) ([]string, error) {
	prefix, ok := storage.IDPrefixOf[collection]
	if !ok {
		return nil, fmt.Errorf("collection %q has no id documents", collection)
	}
	entries, err := os.ReadDir(s.files.CollectionDir(collection))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("list %s: %w", collection, err)
	}
	var ids []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if ok && storage.CheckID(prefix, id) == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}
