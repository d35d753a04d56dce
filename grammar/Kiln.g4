// Kiln.g4 - the grammar of the Kiln tile language (LANGUAGE.md v0).
//
// The parser only recognises structure; frontend/ASTBuilder.cpp turns the parse tree into
// the AST and semantic analysis gives it meaning. A few shapes of the grammar are chosen
// for the builder and for good error messages rather than for brevity:
//  * expressions are one left-recursive rule, so a long chain such as `a + b + ... + z`
//    becomes a left spine of contexts that the builder walks with a loop, and each operand
//    costs one parse-tree context instead of one per precedence level;
//  * every decision needs only a few tokens of look-ahead (a parenthesis or a tuple, a
//    name or a tuple pattern after `let`, an assignment or an expression statement), so
//    that a syntax error points at the token that is really wrong rather than at the
//    start of a long look-ahead;
//  * `tile`, `block_mask`, `range`, `static_range` and `blocks` are ordinary identifiers
//    that the builder recognises by spelling, so programs may still use them as names.
// Precedence (tightest first) and the rest of the syntax are described in docs/grammar.md.

grammar Kiln;

//===----------------------------------------------------------------------===//
// Items
//===----------------------------------------------------------------------===//

module
    : item* EOF
    ;

item
    : KW_IMPORT STRING SEMI                                         # importItem
    | KW_CONST IDENT (COLON type)? ASSIGN expr SEMI                 # constItem
    | attribute* kind=(KW_FN | KW_KERNEL | KW_GRAPH) IDENT
      LPAREN paramList? RPAREN block                                # functionItem
    ;

attribute
    : AT IDENT (LPAREN argList? RPAREN)?
    ;

paramList
    : param (COMMA param)* COMMA?
    ;

// `x`, `x: *f32`, `const BLOCK: i32 = 1024`; a default is allowed on any parameter.
param
    : KW_CONST? IDENT (COLON type)? (ASSIGN expr)?
    ;

//===----------------------------------------------------------------------===//
// Types as written: `f32`, `*T`, `tile<T, [d0, d1]>`, `block_mask<BM, BN(, ROWS, COLS)?>`
//===----------------------------------------------------------------------===//

type
    : op=(STAR | POW) type                                          # pointerType
    | IDENT LT type COMMA LBRACK exprList? RBRACK GT                # tileType
    | IDENT LT typeDim COMMA typeDim (COMMA typeDim COMMA typeDim)? GT # blockMaskType
    | IDENT                                                         # scalarType
    ;

// The dimensions of block_mask<..> are followed by `>`, so a full expression would swallow
// the closing bracket as a comparison; they are literals, names or parenthesised.
typeDim
    : INT                                                           # intTypeDim
    | IDENT                                                         # nameTypeDim
    | LPAREN expr RPAREN                                            # parenTypeDim
    ;

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

block
    : LBRACE stmt* RBRACE
    ;

stmt
    // `let x = e;`, `var x: T = e;`, `let (a, b) = e;` (a tuple pattern has no type).
    : kw=(KW_LET | KW_VAR)
      (IDENT (COLON type)? | LPAREN IDENT (COMMA IDENT)* COMMA? RPAREN)
      ASSIGN expr SEMI                                              # bindStmt
    | KW_FOR IDENT KW_IN IDENT LPAREN exprList RPAREN block         # forStmt
    | KW_WHILE expr block                                           # whileStmt
    | KW_IF expr block (KW_ELSE KW_IF expr block)* (KW_ELSE block)? # ifStmt
    | KW_RETURN expr? SEMI                                          # returnStmt
    // The grid is required; the grammar lets it be missing so that the builder can say
    // so in one error instead of two about brackets.
    | KW_LAUNCH IDENT (LBRACK LPAREN exprList RPAREN RBRACK)?
      LPAREN argList? RPAREN SEMI                                   # launchStmt
    | block                                                         # blockStmt
    // `x = e;` and `x += e;` share their start with `e;`: the target is parsed as an
    // expression and the builder requires it to be a plain name. At the start of a
    // statement `{` opens a block unless it reads as a dictionary (`{key: ...` or `{};`),
    // which three tokens of look-ahead tell apart.
    | expr (assignOp expr)? SEMI                                    # exprStmt
    ;

assignOp
    : ASSIGN | PLUS_ASSIGN | MINUS_ASSIGN | STAR_ASSIGN | SLASH_ASSIGN | PERCENT_ASSIGN
    | AMP_ASSIGN | PIPE_ASSIGN | CARET_ASSIGN | SHL_ASSIGN | SHR_ASSIGN
    ;

//===----------------------------------------------------------------------===//
// Expressions, tightest binding first; the binary operators are left-associative but
// for `**` and the conditional `a if c else b`, which group to the right as in Python.
//===----------------------------------------------------------------------===//

expr
    // `x.f(args)` calls a method; `x.f` without parentheses reads a field (mask.rows).
    : expr DOT IDENT (LPAREN argList? RPAREN)?                      # methodExpr
    | expr LBRACK indexItem (COMMA indexItem)* COMMA? RBRACK        # indexExpr
    // `**` binds tighter than a prefix operator on its left: -x ** 2 is -(x ** 2).
    | <assoc=right> expr op=POW expr                                # binaryExpr
    | op=(MINUS | BANG | TILDE | PLUS) expr                         # unaryExpr
    | expr op=(STAR | SLASH | PERCENT) expr                         # binaryExpr
    | expr op=(PLUS | MINUS) expr                                   # binaryExpr
    | expr op=(SHL | SHR) expr                                      # binaryExpr
    | expr op=AMP expr                                              # binaryExpr
    | expr op=CARET expr                                            # binaryExpr
    | expr op=PIPE expr                                             # binaryExpr
    | expr op=(EQ | NE | LT | LE | GT | GE) expr                    # binaryExpr
    | expr op=ANDAND expr                                           # binaryExpr
    | expr op=OROR expr                                             # binaryExpr
    | <assoc=right> expr KW_IF expr KW_ELSE expr                    # condExpr
    | IDENT LPAREN argList? RPAREN                                  # callExpr
    | IDENT                                                         # nameExpr
    | literal                                                       # literalExpr
    // `(e)` groups, `(e,)` and `(a, b)` are tuples: one alternative keeps this LL(1).
    | LPAREN expr (COMMA (expr (COMMA expr)* COMMA?)?)? RPAREN      # parenExpr
    | LBRACK (expr (COMMA expr)* COMMA?)? RBRACK                    # listExpr
    | LBRACE (dictEntry (COMMA dictEntry)* COMMA?)? RBRACE          # dictExpr
    ;

literal
    : INT | FLOAT | STRING | KW_TRUE | KW_FALSE | KW_INF | KW_NAN
    ;

indexItem
    : COLON | KW_NONE
    ;

dictEntry
    : IDENT COLON expr
    ;

exprList
    : expr (COMMA expr)* COMMA?
    ;

argList
    : arg (COMMA arg)* COMMA?
    ;

// `mask = m` is a keyword argument; `ASSIGN` never starts or continues an expression, so
// two tokens of look-ahead decide.
arg
    : (IDENT ASSIGN)? expr
    ;

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

// Keywords carry a KW_ prefix so that the generated enum cannot clash with C macros
// such as NAN or TRUE.
KW_IMPORT : 'import';
KW_CONST  : 'const';
KW_FN     : 'fn';
KW_KERNEL : 'kernel';
KW_GRAPH  : 'graph';
KW_LET    : 'let';
KW_VAR    : 'var';
KW_FOR    : 'for';
KW_IN     : 'in';
KW_WHILE  : 'while';
KW_IF     : 'if';
KW_ELSE   : 'else';
KW_RETURN : 'return';
KW_LAUNCH : 'launch';
KW_TRUE   : 'true';
KW_FALSE  : 'false';
KW_INF    : 'inf';
KW_NAN    : 'nan';
KW_NONE   : 'None';

LPAREN : '(';
RPAREN : ')';
LBRACK : '[';
RBRACK : ']';
LBRACE : '{';
RBRACE : '}';
COMMA  : ',';
SEMI   : ';';
COLON  : ':';
DOT    : '.';
AT     : '@';

PLUS_ASSIGN    : '+=';
MINUS_ASSIGN   : '-=';
STAR_ASSIGN    : '*=';
SLASH_ASSIGN   : '/=';
PERCENT_ASSIGN : '%=';
AMP_ASSIGN     : '&=';
PIPE_ASSIGN    : '|=';
CARET_ASSIGN   : '^=';
SHL_ASSIGN     : '<<=';
SHR_ASSIGN     : '>>=';

ANDAND : '&&';
OROR   : '||';
EQ     : '==';
NE     : '!=';
LE     : '<=';
GE     : '>=';
SHL    : '<<';
SHR    : '>>';
LT     : '<';
GT     : '>';
ASSIGN : '=';

POW     : '**';
PLUS    : '+';
MINUS   : '-';
STAR    : '*';
SLASH   : '/';
PERCENT : '%';
AMP     : '&';
PIPE    : '|';
CARET   : '^';
TILDE   : '~';
BANG    : '!';

IDENT : [A-Za-z_] [A-Za-z0-9_]*;

// Underscores may separate digits: 1_000, 0xFFFF_FFFF. A float needs digits on both sides
// of the dot (`2.0`, not `2.`), so `2.to(f32)` is a method call on an integer.
FLOAT : DEC '.' DEC EXPONENT? | DEC EXPONENT;
INT   : DEC | '0' [xX] HEX_DIGIT ('_'? HEX_DIGIT)*;

// A digit run glued to letters (`12abc`, `0x`, `1__0`, `1e`) is one malformed number,
// reported once as E0007 rather than as a number followed by a stray name. It only wins
// where FLOAT and INT match less text.
MALFORMED_NUMBER : [0-9] [0-9A-Za-z_]* ('.' [0-9] [0-9A-Za-z_]*)? -> type(INT);

fragment DEC       : [0-9] ('_'? [0-9])*;
fragment EXPONENT  : [eE] [+-]? DEC;
fragment HEX_DIGIT : [0-9A-Fa-f];

// Escapes are checked (and decoded) outside the grammar, so that an unknown escape or a
// missing closing quote is reported precisely and the parser still sees a string.
STRING              : '"' ('\\' ~[\r\n]? | ~["\\\r\n])* '"';
UNTERMINATED_STRING : '"' ('\\' ~[\r\n]? | ~["\\\r\n])* -> type(STRING);
// Single quotes are a common slip from Python; lexing them as one (bad) string gives one
// clear error instead of two stray quote characters.
SINGLE_QUOTED_STRING : '\'' ('\\' ~[\r\n]? | ~['\\\r\n])* '\''? -> type(STRING);

// A comment without `*/` runs to the end of the file; its rule cannot match across a
// `*/`, so it only wins (as the longer match) when the comment is really unterminated.
LINE_COMMENT         : '//' ~[\r\n]* -> skip;
BLOCK_COMMENT        : '/*' .*? '*/' -> skip;
UNTERMINATED_COMMENT : '/*' (~'*' | '*'+ ~[*/])* '*'* EOF -> channel(HIDDEN);

WS : [ \t\r\n\f]+ -> skip;

// Anything else is one bad character: a whole UTF-8 sequence (the parser feeds the lexer
// one symbol per byte) or a single ASCII character. It is reported as E0005 and hidden
// from the parser so that one stray character causes one error.
BAD_CHAR : ([\u00C0-\u00FF] [\u0080-\u00BF]* | .) -> channel(HIDDEN);
