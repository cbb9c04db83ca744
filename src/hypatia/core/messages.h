// Where the messages a user should see go: warnings, printed values (the Print op), profile
// summaries and rewrite traces. By default warnings and diagnostics go to stderr and printed values
// to stdout; a front end replaces the sinks (Python: warnings.warn, sys.stdout, sys.stderr), so
// that its capture mechanisms (redirect_stdout, pytest, logging, notebooks) see them.
#pragma once
#include <functional>
#include <string>

namespace hypatia {

enum class MessageChannel {
  Warning,     ///< a warning ("hypatia warning: ..." on stderr by default; Python's warnings.warn)
  Output,      ///< output the user asked for, such as the Print op's lines (stdout by default)
  Diagnostic,  ///< diagnostics the user turned on: profile summaries, print_rewrites (stderr)
};

/// Sends `text` to a channel. Warnings are one message without a trailing newline; Output and
/// Diagnostic text is written as given.
void emit_message(MessageChannel channel, const std::string& text);
inline void warn(const std::string& text) { emit_message(MessageChannel::Warning, text); }

/// The default sink (stderr / stdout), for a replacement that cannot deliver a message.
void emit_default_message(MessageChannel channel, const std::string& text);

/// Replaces the sink of every channel (null restores the defaults). The sink runs on the thread
/// that emits the message, possibly inside a running kernel; it must not throw.
using MessageSink = std::function<void(MessageChannel, const std::string&)>;
void set_message_sink(MessageSink sink);

}  // namespace hypatia
