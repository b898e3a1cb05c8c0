(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(declare-fun Ra_ () (_ BitVec 51))
(declare-fun Ta_ () (_ BitVec 51))
(declare-fun Tb_ () (_ BitVec 51))
(declare-fun x0 () (_ BitVec 32))
(assert
 (bvsle (_ bv2251799813685128 51) Ta_))
(assert
 (bvsge (_ bv105 51) Ta_))
(assert
 (bvsle (_ bv2251799813685128 51) Tb_))
(assert
 (bvsge (_ bv105 51) Tb_))
(assert
 (bvsle (_ bv2251799813677688 51) Ra_))
(assert
 (bvsge (_ bv6615 51) Ra_))
(assert
 (bvslt Ta_ Tb_))
(assert
 (let ((?x55 (bvadd (bvadd ((_ sign_extend 18) ((_ sign_extend 1) ((_ extract 31 0) x0))) Ta_) Ra_)))
(let ((?x60 ((_ extract 31 0) (ite (bvsgt (_ bv2251797666201600 51) ?x55) (_ bv2251797666201600 51) (ite (bvslt (_ bv2147483647 51) ?x55) (_ bv2147483647 51) ?x55)))))
(let ((?x47 (bvadd (bvadd ((_ sign_extend 18) ((_ sign_extend 1) ((_ extract 31 0) x0))) Tb_) Ra_)))
(let ((?x53 ((_ extract 31 0) (ite (bvsgt (_ bv2251797666201600 51) ?x47) (_ bv2251797666201600 51) (ite (bvslt (_ bv2147483647 51) ?x47) (_ bv2147483647 51) ?x47)))))
(bvslt ?x53 ?x60))))))
(check-sat)
