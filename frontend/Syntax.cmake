# kiln_syntax: Kiln source text -> AST. The ANTLR-generated lexer/parser (kiln_grammar)
# stays a private dependency: nothing outside the frontend sees a parse tree.
add_library(kiln_syntax STATIC
  AST.cpp
  ASTBuilder.cpp
  ASTPrinter.cpp
  Literals.cpp
  NestingScan.cpp
  Parser.cpp
  SyntaxErrors.cpp
)
kiln_target_defaults(kiln_syntax)
target_link_libraries(kiln_syntax PUBLIC kiln_support PRIVATE kiln_grammar)
