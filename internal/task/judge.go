package task

import "context"

// judgeAttempt asks the task's judge for its verdict on an attempt's work, once its
// checks have run, and records it.
func (s *Service) judgeAttempt(ctx context.Context, name string, n int) {}
