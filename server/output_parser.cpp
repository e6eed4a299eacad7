// The plain output parser: every byte is content.
#include "server/output_parser.h"

#include <string>

namespace anelm::server {

namespace {

class PlainParser final : public OutputParser {
 public:
  void feed(std::string_view text, OutputDelta& out) override {
    content_ += text;
    out.content += text;
  }
  void finish(OutputDelta&, bool) override {}
  void result(ChoiceOutput& out) const override { out.content = content_; }

 private:
  std::string content_;
};

}  // namespace

std::unique_ptr<OutputParser> make_plain_parser() { return std::make_unique<PlainParser>(); }

}  // namespace anelm::server
