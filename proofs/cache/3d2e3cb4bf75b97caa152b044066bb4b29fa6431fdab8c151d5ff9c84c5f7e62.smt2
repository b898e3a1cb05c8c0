(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun Tp_ () (_ BitVec 43))
(declare-fun sc_ () (_ BitVec 43))
(assert
 (bvsle Tp_ (_ bv68719476737 43)))
(assert
 (bvsge Tp_ (_ bv8727373545471 43)))
(assert
 (bvsle sc_ (_ bv67108864 43)))
(assert
 (bvsge sc_ (_ bv8796025913344 43)))
(assert
 (let (($x43 (= ((_ sign_extend 11) (bvadd Tp_ (bvshl sc_ (_ bv7 43)))) (bvadd ((_ sign_extend 11) Tp_) (bvshl ((_ sign_extend 11) sc_) (_ bv7 54))))))
(not $x43)))
(check-sat)
