package telegramtest

import (
	"errors"
	"net"
)

// An outage: Stop takes the server off the network as a crashed or
// unreachable Bot API would be (connections refused, open ones cut), and
// Restart brings it back at the same URL with its state (pending updates,
// everything recorded) intact.

// Stop closes the listener and every client connection; requests fail
// until Restart. Pending long polls end with their connections. It is a
// no-op when the server is already stopped or closed.
func (s *Server) Stop() {
	s.mu.Lock()
	if s.stopped || s.isClosedLocked() {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	served := s.served
	s.mu.Unlock()
	_ = s.srv.Listener.Close()
	s.srv.CloseClientConnections()
	if served != nil {
		<-served // the Serve of the previous Restart returned
	}
}

// Restart listens again at the server's address after Stop. It fails if
// the port was taken in between.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped {
		return errors.New("telegramtest: restart: the server is not stopped")
	}
	if s.isClosedLocked() {
		return errors.New("telegramtest: restart: the server is closed")
	}
	ln, err := net.Listen("tcp", s.srv.Listener.Addr().String())
	if err != nil {
		return err
	}
	s.srv.Listener = ln
	served := make(chan struct{})
	s.served = served
	s.stopped = false
	go func() {
		defer close(served)
		// Serve returns when Stop or Close closes ln: its error says
		// only that.
		_ = s.srv.Config.Serve(ln)
	}()
	return nil
}

func (s *Server) isClosedLocked() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}
