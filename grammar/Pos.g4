grammar Pos; file: EOF;
