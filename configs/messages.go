package configs

import (
	"fmt"

	"github.com/gateway/gateway/dispatch"
)

// Delivery is messages.delivery.
type Delivery struct {
	// MaxFailures counts turns that failed (store or transcript errors;
	// a model error is answered with a notice at once). Default 3.
	MaxFailures int `mapstructure:"maxFailures"`
	// MaxCrashes counts process deaths while the message's turn ran.
	// Default 5.
	MaxCrashes int `mapstructure:"maxCrashes"`
	// DeadLetters is how many given-up messages and replies are kept for
	// `gateway deliveries list --failed` (the oldest go past it). Default
	// 1000.
	DeadLetters int `mapstructure:"deadLetters"`
}

// Validate checks messages.delivery.
func (d Delivery) Validate() error {
	if d.MaxFailures < 1 || d.MaxFailures > 100 {
		return fmt.Errorf("messages.delivery.maxFailures: %d is not between 1 and 100", d.MaxFailures)
	}
	if d.MaxCrashes < 1 || d.MaxCrashes > 100 {
		return fmt.Errorf("messages.delivery.maxCrashes: %d is not between 1 and 100", d.MaxCrashes)
	}
	if d.DeadLetters < 1 || d.DeadLetters > 100000 {
		return fmt.Errorf("messages.delivery.deadLetters: %d is not between 1 and 100000", d.DeadLetters)
	}
	return nil
}

// Messages is the messages section.
type Messages struct {
	Queue dispatch.QueueConfig `mapstructure:"queue"`
	// Inbound joins a sender's quick messages (and Telegram's split of a
	// long paste) into one input before the turn.
	Inbound dispatch.InboundConfig `mapstructure:"inbound"`
	// Delivery bounds how often an accepted message is retried before it
	// is given up with a notice to its chat (SPEC §3.7).
	Delivery Delivery `mapstructure:"delivery"`
}

// Validate checks the messages section: delivery, inbound and queue.
func (m Messages) Validate() error {
	if err := m.Delivery.Validate(); err != nil {
		return err
	}
	if err := m.Inbound.Validate(); err != nil {
		return err
	}
	return m.Queue.Validate()
}
