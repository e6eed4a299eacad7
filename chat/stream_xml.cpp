// The Qwen XML reader of the output parser's state machine (stream_machine.h): the bytes of a
// <tool_call> block of the form
//   <function=NAME>\n<parameter=ARG>\nVALUE\n</parameter>\n ... </function>\n</tool_call>
// The call is announced at the '>' of <function=NAME>, with "{" as its first argument fragment.
// Each parameter then adds `"ARG": VALUE` (", " between them): a string-only parameter streams its
// value as escaped JSON string text while it is written; any other value is held until its
// </parameter> and typed by the tool's schema (xml_args.h). </function> adds "}" and completes the
// call; the </tool_call> after it is Hermes' trailer state (a missing one is tolerated). Anything
// else is malformed: false, and the machine turns the held text back into content.
#include "chat/stream_machine.h"
#include "chat/stream_markers.h"
#include "chat/xml_args.h"

namespace anelm::chat::detail {
namespace {

// A tag or a name may not contain these: they would be markup or a line break.
bool name_byte(char c) { return c != '<' && c != '>' && c != '\n' && c != '\r'; }

bool is_prefix(std::string_view prefix, std::string_view of) {
  return prefix.size() <= of.size() && of.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool Machine::xml_step(char c) {
  XmlCall& x = xml_;
  switch (x.state) {
    case XS::kOpenWs:
      if (is_ws(c)) return true;
      x.tag.clear();
      x.state = XS::kOpenTag;
      [[fallthrough]];
    case XS::kOpenTag:
      x.tag.push_back(c);
      if (!is_prefix(x.tag, kXmlFunctionOpen)) return false;
      if (x.tag.size() == kXmlFunctionOpen.size()) {
        name_.clear();
        x.state = XS::kFuncName;
      }
      return true;

    case XS::kFuncName:
      if (c == '>') {
        if (name_.empty()) return false;
        xml_begin_call();
        return true;
      }
      if (!name_byte(c)) return false;
      name_.push_back(c);
      return name_.size() <= kMaxNameBytes;

    case XS::kBodyWs:
      if (is_ws(c)) return true;
      if (c != '<') return false;
      x.tag.assign(1, c);
      x.state = XS::kBodyTag;
      return true;

    case XS::kBodyTag:
      return xml_tag(c);

    case XS::kParamName:
      if (c == '>') {
        if (x.param.empty()) return false;
        xml_begin_value();
        return true;
      }
      if (!name_byte(c)) return false;
      x.param.push_back(c);
      return x.param.size() <= kMaxNameBytes;

    case XS::kValueStart:
      x.state = XS::kValue;
      if (c == '\n') return true;  // framing: the template writes the value on its own line
      [[fallthrough]];
    case XS::kValue: {
      std::string text;
      const bool closed = x.value_end.step(c, text);
      xml_value_bytes(text);
      if (closed) xml_end_value();
      return true;
    }
  }
  return false;
}

// One byte of a tag between parameters.
bool Machine::xml_tag(char c) {
  XmlCall& x = xml_;
  x.tag.push_back(c);
  if (x.tag == kXmlParamOpen) {
    x.param.clear();
    x.state = XS::kParamName;
    return true;
  }
  if (x.tag == kXmlFunctionClose) {
    if (!xml_end_call()) return false;
    trailer_k_ = 0;
    trailer_buf_.clear();
    bs_ = BS::kTrailer;
    return true;
  }
  if (x.tag == kHermesClose) {  // </function> left out: the block's end ends the call too
    if (!xml_end_call()) return false;
    end_block();
    return true;
  }
  return is_prefix(x.tag, kXmlParamOpen) || is_prefix(x.tag, kXmlFunctionClose) ||
         is_prefix(x.tag, kHermesClose);
}

// <function=NAME> is complete: the call is announced.
void Machine::xml_begin_call() {
  XmlCall& x = xml_;
  have_name_ = true;
  args_seen_ = true;
  committed_ = false;
  name_args_ = false;
  x.properties = xml_function_properties(opt_.tools.get(), name_);
  x.first = true;
  x.state = XS::kBodyWs;
  args_buf_ = "{";
  commit();
}

// <parameter=ARG> is complete: a string-only value starts streaming its member now.
void Machine::xml_begin_value() {
  XmlCall& x = xml_;
  x.types = xml_param_types(x.properties, x.param);
  x.value.clear();
  x.value_end.reset();
  x.newline = false;
  x.streaming = false;
  x.state = XS::kValueStart;
  if (xml_string_only(x.types)) xml_to_string_stream();
}

// Decided value bytes. A '\n' is held until the next byte: the last one before </parameter> is
// framing, not value.
void Machine::xml_value_bytes(std::string_view text) {
  XmlCall& x = xml_;
  for (char c : text) {
    if (x.newline) {
      x.newline = false;
      xml_value_byte('\n');
    }
    if (c == '\n') {
      x.newline = true;
    } else {
      xml_value_byte(c);
    }
  }
}

void Machine::xml_value_byte(char c) {
  XmlCall& x = xml_;
  if (x.streaming) {
    std::string escaped;
    append_json_escaped(escaped, std::string_view(&c, 1));
    put_args(escaped);
    return;
  }
  x.value.push_back(c);
  if (x.value.size() > kMaxTypedValueBytes) xml_to_string_stream();  // too long to hold: a string
}

// From here on the value streams as a JSON string: its member's key, the opening quote and the
// value so far.
void Machine::xml_to_string_stream() {
  XmlCall& x = xml_;
  std::string member = x.first ? "" : ", ";
  member += json_quoted(x.param);
  member += ": \"";
  append_json_escaped(member, x.value);
  x.value.clear();
  x.streaming = true;
  put_args(member);
  held_.clear();  // what was held of this parameter is now arguments
}

// </parameter>: the member is complete (the held newline before it was framing).
void Machine::xml_end_value() {
  XmlCall& x = xml_;
  if (x.streaming) {
    put_args("\"");
  } else {
    std::string member = x.first ? "" : ", ";
    member += json_quoted(x.param);
    member += ": ";
    member += xml_value_json(x.value, x.types);
    put_args(member);
  }
  x.first = false;
  x.streaming = false;
  x.value.clear();
  x.state = XS::kBodyWs;
  held_.clear();  // a clean point: a failure later returns only what follows as content
}

bool Machine::xml_end_call() {
  put_args("}");
  return finish_call();
}

}  // namespace anelm::chat::detail
