(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun Tp_ () (_ BitVec 42))
(declare-fun sc_ () (_ BitVec 42))
(assert
 (bvsle Tp_ (_ bv34359738369 42)))
(assert
 (bvsge Tp_ (_ bv4363686772735 42)))
(assert
 (bvsle sc_ (_ bv67108864 42)))
(assert
 (bvsge sc_ (_ bv4397979402240 42)))
(assert
 (let (($x43 (= ((_ sign_extend 11) (bvadd Tp_ (bvshl sc_ (_ bv7 42)))) (bvadd ((_ sign_extend 11) Tp_) (bvshl ((_ sign_extend 11) sc_) (_ bv7 53))))))
(not $x43)))
(check-sat)
