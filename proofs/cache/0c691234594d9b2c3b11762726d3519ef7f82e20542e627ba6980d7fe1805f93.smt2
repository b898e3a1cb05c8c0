(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun Tp_ () (_ BitVec 45))
(declare-fun sc_ () (_ BitVec 45))
(assert
 (bvsle Tp_ (_ bv137438953601 45)))
(assert
 (bvsge Tp_ (_ bv35046933135231 45)))
(assert
 (bvsle sc_ (_ bv67108864 45)))
(assert
 (bvsge sc_ (_ bv35184304979968 45)))
(assert
 (let (($x43 (= ((_ sign_extend 11) (bvadd Tp_ (bvshl sc_ (_ bv7 45)))) (bvadd ((_ sign_extend 11) Tp_) (bvshl ((_ sign_extend 11) sc_) (_ bv7 56))))))
(not $x43)))
(check-sat)
