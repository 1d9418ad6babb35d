package agents

// StepKind names what a running turn is doing (Turn.OnStep).
type StepKind string

// Steps of a turn, in the order they can happen.
const (
	// StepModel: a model call starts (once per tool-loop iteration).
	StepModel StepKind = "model"
	// StepTool: a tool call starts; Step.Tool names the tool.
	StepTool StepKind = "tool"
	// StepCompaction: the session is being compacted before a model call.
	StepCompaction StepKind = "compaction"
)

// Step is one advance of a running turn, reported to Turn.OnStep so a chat
// can show progress ("Thinking…", "Using search…"). Callbacks run on the
// turn's goroutine and must not block.
type Step struct {
	Kind StepKind
	// Iteration counts model calls of the turn, from 1 (StepModel).
	Iteration int
	// Tool is the tool's name (StepTool).
	Tool string
}

// step reports s to t.OnStep, if set.
func (t Turn) step(s Step) {
	if t.OnStep != nil {
		t.OnStep(s)
	}
}
