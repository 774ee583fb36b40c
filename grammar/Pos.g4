// The .pos language: experiments on position, distance and length generalisation.
//
// A file holds imports, component definitions (parameterised positional
// components, written in terms of primitives such as rotate(...) and score
// formulas) and experiments (task, model, attention, train, eval sections, with
// `extends` for variants and `preset` blocks for smaller configurations).
//
// The grammar is deliberately small and uniform: every section item is an
// assignment, a call, a `use` of a component, a `param` declaration or a
// preset. What a name means (a setting, a primitive, a channel) is decided by
// semantic analysis, which can then say "did you mean ...?" instead of a bare
// syntax error. Statements need no terminators; a ';' is allowed.
grammar Pos;

file
  : importDecl* topDecl* EOF
  ;

// Entry point for a lone expression (`posc run --set train.steps=100`).
exprOnly
  : expr EOF
  ;

// Entry point for one input of `posc repl`: a command (`:sweep k, -50..50`),
// a definition (`k(d) = 20*cos(2*pi*d/6)`, `w = 2*pi/6`) or an expression.
replLine
  : ':' command=ID argList? EOF                                   # replCommand
  | name=ID ('(' params+=ID (',' params+=ID)* ')')? '=' expr EOF   # replDefinition
  | expr EOF                                                      # replExpression
  ;

importDecl
  : IMPORT dottedName (',' dottedName)* ';'?
  ;

dottedName
  : ID ('.' ID)*
  ;

topDecl
  : componentDecl
  | experimentDecl
  | analysisDecl
  ;

// Kernels over distance and the analytic controls, run by `posc analyze`.
analysisDecl
  : ANALYSIS name=ID block
  ;

componentDecl
  : COMPONENT name=ID '(' (paramDecl (',' paramDecl)*)? ')' block
  ;

paramDecl
  : name=ID ':' type=ID ('=' expr)?
  ;

experimentDecl
  : EXPERIMENT name=ID (EXTENDS base=ID)? '{' experimentItem* '}'
  ;

experimentItem
  : section
  | presetDecl
  ;

presetDecl
  : PRESET name=ID '{' section* '}'
  ;

section
  : name=ID (appendOp='+=')? block
  ;

block
  : '{' item* '}'
  ;

item
  : name=ID '=' expr (',' option)* ';'?                  # assignItem
  | USE name=ID '(' argList? ')' ';'?                     # useItem
  | PARAM name=ID ('[' dims+=expr ']')* '=' value=expr (',' option)* ';'?   # paramItem
  | name=ID '(' argList? ')' ';'?                         # callItem
  ;

option
  : name=ID '=' expr
  ;

argList
  : arg (',' arg)*
  ;

arg
  : (name=ID '=')? expr
  ;

// Precedence, loosest first: ?:, ||, &&, comparisons, .., + -, * / %, unary, ^, postfix.
expr
  : cond=orExpr ('?' then=expr ':' otherwise=expr)?
  ;

orExpr
  : andExpr (op='||' andExpr)*
  ;

andExpr
  : cmpExpr (op='&&' cmpExpr)*
  ;

cmpExpr
  : rangeExpr (op=('<' | '<=' | '>' | '>=' | '==' | '!=') rangeExpr)?
  ;

rangeExpr
  : addExpr ('..' addExpr)?
  ;

addExpr
  : mulExpr (ops+=('+' | '-') mulExpr)*
  ;

mulExpr
  : unaryExpr (ops+=('*' | '/' | '%') unaryExpr)*
  ;

unaryExpr
  : op=('-' | '+' | '!') unaryExpr
  | powExpr
  ;

powExpr
  : postfixExpr ('^' unaryExpr)?
  ;

postfixExpr
  : primary postfix*
  ;

postfix
  : '(' argList? ')'      # callPostfix
  | '[' expr ']'          # indexPostfix
  | '.' ID                # memberPostfix
  ;

primary
  : NUMBER                          # numberPrimary
  | STRING                          # stringPrimary
  | ID                              # namePrimary
  | '[' (expr (',' expr)*)? ','? ']'  # listPrimary
  | '(' expr (',' expr)* ')'        # parenPrimary
  ;

IMPORT     : 'import';
COMPONENT  : 'component';
EXPERIMENT : 'experiment';
EXTENDS    : 'extends';
PRESET     : 'preset';
USE        : 'use';
PARAM      : 'param';
ANALYSIS   : 'analysis';

ID     : [a-zA-Z_] [a-zA-Z_0-9]*;
// A '.' belongs to a number only when a digit follows, so `0..16` is a range.
NUMBER : [0-9]+ ('.' [0-9]+)? ([eE] [+-]? [0-9]+)?;
STRING : '"' (~["\\\r\n] | '\\' .)* '"';

LINE_COMMENT  : '//' ~[\r\n]* -> channel(HIDDEN);
BLOCK_COMMENT : '/*' .*? '*/' -> channel(HIDDEN);
WS            : [ \t\r\n]+ -> channel(HIDDEN);
// Any other character: reported by the front end as an unexpected character.
ERROR_CHAR    : .;
