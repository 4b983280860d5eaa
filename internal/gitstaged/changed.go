package gitstaged

import "context"

// Changed returns the paths the working tree of the git work tree holding
// projectDir changes from its last commit, as In names them: staged or
// not, and new files git does not ignore. A file staged and then changed
// back in the working tree is still listed.
func Changed(ctx context.Context, projectDir string) ([]string, error) {
	return list(ctx, projectDir,
		[]string{"diff", "--cached", "--name-only", "--no-renames", "-z"},
		[]string{"diff", "--name-only", "--no-renames", "-z"},
		[]string{"ls-files", "--others", "--exclude-standard", "--full-name", "-z"})
}
